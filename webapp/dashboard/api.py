"""A small JSON API over the same services as the pages: list, detail, snapshot, events, individuals (paginated),
create, and the actions. Session authentication; every write needs the CSRF token (header ``X-CSRFToken``).
Every error is ``{"error": MESSAGE}`` (a bad field adds ``"field"``), never an HTML page (``api_errors``)."""
from __future__ import annotations

import functools
import json
import re
import time
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.paginator import InvalidPage, Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.request import RawPostDataException
from django.utils.cache import patch_vary_headers
from django.views.decorators.gzip import gzip_page
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from webapp.dashboard import charts, snapshots
from webapp.dashboard.beliefs_chart import search_beliefs
from webapp.dashboard.access import api_login_required, owned_search
from webapp.dashboard.api_errors import json_error as _error
from webapp.dashboard.pages import ACTIONS
from webapp.searches import broadcast
from webapp.searches.models import Search
from webapp.services import lifecycle, queries
from webapp.searches.config import ConfigError

#: The fields of a create request's body.
CREATE_FIELDS = ("name", "config", "launch")
#: Sequence numbers are 64-bit integers in the database; a larger ``after`` cannot match and would overflow.
MAX_SEQ = 2**63 - 1
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: As Django's GZipMiddleware reads ``Accept-Encoding``.
ACCEPTS_GZIP = re.compile(r"\bgzip\b")


class BodyError(ValueError):
    """A request body that is not the JSON object the endpoint expects."""


def clean_query(view):
    """No NUL or other control character in a query parameter: some databases refuse them in a query (a 500),
    and no name, sort key or number contains one."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs):
        for name, values in request.GET.lists():
            if any(CONTROL.search(value) for value in [name, *values]):
                return _error(f"The query parameter {name!r:.100} holds a control character.", field=name[:100])
        return view(request, *args, **kwargs)

    return wrapper


def json_body(request: HttpRequest) -> Any:
    """The request's body parsed as JSON (empty: ``{}``), or :class:`BodyError` saying what is wrong."""
    try:
        raw = request.body
    except RawPostDataException:
        # A multipart form was parsed (by the CSRF check) as it streamed in: there is no body left to read.
        raise BodyError("The body must be JSON (Content-Type: application/json), not a multipart form.") from None
    except RequestDataTooBig:
        raise BodyError(f"The body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes.") from None
    try:
        return json.loads(raw or b"{}")
    except RecursionError:
        raise BodyError("The body must be JSON nested less deeply.") from None
    except ValueError as error:  # JSONDecodeError and UnicodeDecodeError
        raise BodyError(f"The body must be JSON: {error}") from None


@api_login_required
@require_http_methods(["GET", "POST"])
@clean_query
def searches(request: HttpRequest) -> JsonResponse:
    if request.method == "POST":
        return _create(request)
    visible = queries.visible_searches(request.user).select_related("owner").order_by("-created", "-pk")
    try:
        page = Paginator(visible, 100).page(int(request.GET.get("page", "1")))
    except (ValueError, InvalidPage):
        return _error("`page` must be a page number that exists.", field="page")
    return JsonResponse({"results": [queries.search_row(s) for s in page.object_list],
                         "count": page.paginator.count, "page": page.number, "pages": page.paginator.num_pages})


def _object_body(request: HttpRequest, fields: tuple[str, ...], shape: str, named: str) -> dict | JsonResponse:
    """The request's JSON object, or the 400 that says why it is not one of ``fields`` only."""
    try:
        body = json_body(request)
    except BodyError as error:
        return _error(str(error))
    if not isinstance(body, dict):
        return _error(f"The body must be a JSON object {shape}.")
    unknown = sorted(set(body) - set(fields))
    if unknown:
        return _error(f"Unknown field {unknown[0]!r}; {named} {', '.join(fields)}.", field=unknown[0])
    return body


def _create(request: HttpRequest) -> JsonResponse:
    body = _object_body(request, CREATE_FIELDS, '{"name": ..., "config": {...}, "launch": false}', "the fields are")
    if isinstance(body, JsonResponse):
        return body
    launch = body.get("launch", False)
    if not isinstance(launch, bool):
        return _error(f"`launch` must be true or false (got {launch!r:.100}).", field="launch")
    try:
        search = lifecycle.create_search(request.user, body.get("name", ""), body.get("config", {}))
        if launch:
            lifecycle.launch(search)
    except ConfigError as error:
        return _error(str(error), field=error.field)
    except lifecycle.ActionError as error:
        return _error(str(error), field="name")
    return JsonResponse(queries.search_detail(search), status=201)


@api_login_required
@require_http_methods(["GET", "PATCH"])
@clean_query
def search(request: HttpRequest, search_id: int) -> JsonResponse:
    found = owned_search(request, search_id)
    if request.method == "PATCH":
        return _edit(request, found)
    return JsonResponse(queries.search_detail(found))


def _edit(request: HttpRequest, search: Search) -> JsonResponse:
    """A draft's new name and/or configuration (each checked as at creation; a configuration is given whole)."""
    body = _object_body(request, ("name", "config"), '{"name": ..., "config": {...}}', "a draft's fields are")
    if isinstance(body, JsonResponse):
        return body
    try:
        lifecycle.update_draft(search, body.get("name", search.name), body.get("config", search.config))
    except ConfigError as error:
        return _error(str(error), field=error.field)
    except lifecycle.InvalidName as error:
        return _error(str(error), field="name")
    except lifecycle.ActionError as error:
        return _error(str(error), status=409)
    search.refresh_from_db()
    return JsonResponse(queries.search_detail(search))


@api_login_required
@require_GET
@clean_query
def snapshot(request: HttpRequest, search_id: int) -> HttpResponse:
    """The live page's snapshot, from the cache every viewer shares (``snapshots``), gzipped for a client that
    accepts it (~4 MB of JSON at 10,000 individuals; no secret in it, so compressing it leaks nothing: BREACH).
    ``X-Server-Time`` is the server's clock now (the page's clock skew): a cached snapshot's ``now`` is when
    it was built."""
    gzipped = bool(ACCEPTS_GZIP.search(request.META.get("HTTP_ACCEPT_ENCODING", "")))
    cached = snapshots.get(owned_search(request, search_id, only=snapshots.FIELDS), gzipped)
    response = HttpResponse(cached.body, content_type="application/json")
    if gzipped:
        response["Content-Encoding"] = "gzip"
    patch_vary_headers(response, ("Accept-Encoding",))
    response["X-Server-Time"] = f"{time.time():.3f}"
    return response


@api_login_required
@require_GET
@clean_query
def pareto(request: HttpRequest, search_id: int) -> JsonResponse:
    """The Pareto chart alone (the live page refreshes it as results come), or 404 for a single objective."""
    search = owned_search(request, search_id)
    figure = charts.pareto(queries.pareto_points(search), queries.objectives_of(search))
    if figure is None:
        return _error("This search has a single objective: no Pareto front.", 404)
    return JsonResponse(figure)


@api_login_required
@require_GET
@clean_query
def beliefs(request: HttpRequest, search_id: int) -> JsonResponse:
    """The beliefs panel alone (the live page refreshes it as results come), or 404 for a strategy that shows
    none (only ``reinforce`` and ``tpe`` do)."""
    figure = search_beliefs(owned_search(request, search_id))
    if figure is None:
        return _error("This search's strategy shows no beliefs (reinforce and tpe do).", 404)
    return JsonResponse(figure)


@api_login_required
@require_GET
@clean_query
@gzip_page
def events(request: HttpRequest, search_id: int) -> JsonResponse:
    search = owned_search(request, search_id)
    try:
        after = int(request.GET.get("after") or "0")
    except ValueError:
        after = -1
    if not 0 <= after <= MAX_SEQ:
        return _error(f"`after` must be a sequence number from 0 to {MAX_SEQ}.", field="after")
    return JsonResponse({"events": broadcast.events_after(search.pk, after), "seq": search.event_seq})


@api_login_required
@require_GET
@clean_query
def individuals(request: HttpRequest, search_id: int) -> JsonResponse:
    search = owned_search(request, search_id, only=("status",))  # its id, and its state for the rows
    try:
        return JsonResponse(queries.individuals_page(search, request.GET).as_dict())
    except queries.QueryError as error:
        return _error(str(error))


@api_login_required
@require_POST
def action(request: HttpRequest, search_id: int, action: str) -> JsonResponse:
    search = owned_search(request, search_id)
    try:
        if action == "clone":
            return JsonResponse(queries.search_detail(lifecycle.clone(search, request.user)), status=201)
        if action not in ACTIONS:
            return _error(f"Unknown action {action!r}; the actions are {', '.join([*ACTIONS, 'clone'])}.", 404)
        ACTIONS[action](search)
    except lifecycle.ActionError as error:
        return _error(str(error), status=409)
    search.refresh_from_db()
    return JsonResponse(queries.search_detail(search))
