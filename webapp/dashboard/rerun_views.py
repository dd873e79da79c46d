"""Re-run failed individuals: the buttons of a search's and an individual's pages (``POST
/searches/<id>/rerun/``, form fields ``individual`` and ``extend``) and the JSON API (``POST
/api/searches/<id>/rerun/``, body ``{"individual": N, "extend": false}``, both optional). Thin:
``webapp.services.reruns`` decides; a refusal is a 4xx with its message (plain text on a page, JSON in the API)."""
from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from webapp.dashboard.access import api_login_required, owned_search
from webapp.dashboard.api import BodyError, json_body
from webapp.dashboard.api_errors import json_error
from webapp.services import reruns

#: A form's ways of saying yes.
YES = ("1", "true", "on", "yes")
FIELDS = ("individual", "extend")


def _number(value: Any) -> int | None:
    """An individual's number from a form or JSON (``None``: every failed one); :class:`ValueError` else."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(value)
    number = int(value)
    if not 0 <= number < 2**31:
        raise ValueError(value)
    return number


def _bad_number(value: Any) -> str:
    return f"`individual` must be an individual's number, or left out for every failed one (got {value!r:.60})."


@login_required
@require_POST
def rerun(request: HttpRequest, search_id: int) -> HttpResponse:
    search = owned_search(request, search_id)
    value = request.POST.get("individual")
    try:
        number = _number(value)
    except ValueError:
        return HttpResponse(_bad_number(value), status=400, content_type="text/plain; charset=utf-8")
    try:
        done = reruns.rerun(request.user, search, number, extend=request.POST.get("extend", "").lower() in YES)
    except reruns.RerunError as error:
        return HttpResponse(str(error), status=error.status, content_type="text/plain; charset=utf-8")
    messages.success(request, done.message)
    if number is not None:
        return redirect("individual-detail", search_id=search.pk, number=number)
    return redirect("search-detail", search_id=search.pk)


@api_login_required
@require_POST
def api_rerun(request: HttpRequest, search_id: int) -> JsonResponse:
    search = owned_search(request, search_id)
    try:
        body = json_body(request)
    except BodyError as error:
        return json_error(str(error))
    if not isinstance(body, dict):
        return json_error('The body must be a JSON object {"individual": N, "extend": false} (both optional).')
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        return json_error(f"Unknown field {unknown[0]!r:.60}; the fields are {', '.join(FIELDS)}.", field=unknown[0])
    extend = body.get("extend", False)
    if not isinstance(extend, bool):
        return json_error(f"`extend` must be true or false (got {extend!r:.60}).", field="extend")
    try:
        number = _number(body.get("individual"))
    except ValueError:
        return json_error(_bad_number(body.get("individual")), field="individual")
    try:
        return JsonResponse(reruns.rerun(request.user, search, number, extend=extend).as_dict())
    except reruns.RerunError as error:
        return json_error(str(error), error.status)
