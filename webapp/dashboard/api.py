"""A small JSON API over the same services as the pages: list, detail, snapshot, events, individuals (paginated),
create, and the actions. Session authentication; every write needs the CSRF token (header ``X-CSRFToken``)."""
from __future__ import annotations

import json

from django.core.paginator import InvalidPage, Paginator
from django.http import HttpRequest, JsonResponse
from django.views.decorators.gzip import gzip_page
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from webapp.dashboard import charts, live
from webapp.dashboard.access import api_login_required, owned_search
from webapp.dashboard.pages import ACTIONS
from webapp.searches import broadcast
from webapp.services import lifecycle, queries
from webapp.searches.config import ConfigError


def _error(message: str, status: int = 400, **extra) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


@api_login_required
@require_http_methods(["GET", "POST"])
def searches(request: HttpRequest) -> JsonResponse:
    if request.method == "POST":
        return _create(request)
    visible = queries.visible_searches(request.user).select_related("owner").order_by("-created", "-pk")
    try:
        page = Paginator(visible, 100).page(int(request.GET.get("page", "1")))
    except (ValueError, InvalidPage):
        return _error("`page` must be a page number that exists.")
    return JsonResponse({"results": [queries.search_row(s) for s in page.object_list],
                         "count": page.paginator.count, "page": page.number, "pages": page.paginator.num_pages})


def _create(request: HttpRequest) -> JsonResponse:
    try:
        body = json.loads(request.body or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        return _error(f"The body must be JSON: {error}")
    if not isinstance(body, dict):
        return _error('The body must be a JSON object {"name": ..., "config": {...}}.')
    try:
        search = lifecycle.create_search(request.user, body.get("name", ""), body.get("config", {}))
        if body.get("launch"):
            lifecycle.launch(search)
    except ConfigError as error:
        return _error(str(error), field=error.field)
    except lifecycle.ActionError as error:
        return _error(str(error), field="name")
    return JsonResponse(queries.search_detail(search), status=201)


@api_login_required
@require_GET
def search(request: HttpRequest, search_id: int) -> JsonResponse:
    return JsonResponse(queries.search_detail(owned_search(request, search_id)))


@api_login_required
@require_GET
@gzip_page  # ~4 MB of JSON at 10,000 individuals; no secret in it, so compressing it leaks nothing (BREACH)
def snapshot(request: HttpRequest, search_id: int) -> JsonResponse:
    return JsonResponse(live.snapshot(owned_search(request, search_id)))


@api_login_required
@require_GET
def pareto(request: HttpRequest, search_id: int) -> JsonResponse:
    """The Pareto chart alone (the live page refreshes it as results come), or 404 for a single objective."""
    search = owned_search(request, search_id)
    figure = charts.pareto(queries.pareto_points(search), queries.objectives_of(search))
    if figure is None:
        return _error("This search has a single objective: no Pareto front.", 404)
    return JsonResponse(figure)


@api_login_required
@require_GET
@gzip_page
def events(request: HttpRequest, search_id: int) -> JsonResponse:
    search = owned_search(request, search_id)
    try:
        after = int(request.GET.get("after", "0"))
    except ValueError:
        return _error("`after` must be an integer sequence number.")
    return JsonResponse({"events": broadcast.events_after(search.pk, after), "seq": search.event_seq})


@api_login_required
@require_GET
def individuals(request: HttpRequest, search_id: int) -> JsonResponse:
    search = owned_search(request, search_id)
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
