"""The compare page (``/compare/?ids=1,2``), its JSON (``/api/compare/?ids=1,2``, which the page asks again while a
search runs) and its CSV. Thin: the work is in ``webapp.services.comparison`` and ``compare_charts``.

Every answer to a bad choice (fewer than 2 or more than 6 ids, a malformed one, a search that is unknown or
another user's) is a 4xx with a message: plain text for the page and the CSV, JSON under ``/api/``; nothing
is changed by any of them (they only read)."""
from __future__ import annotations

import io

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.gzip import gzip_page
from django.views.decorators.http import require_GET

from webapp.dashboard import display
from webapp.dashboard.access import api_login_required
from webapp.dashboard.api_errors import json_error
from webapp.dashboard.compare_charts import colour, comparison_figures
from webapp.searches.kinds import kind_of
from webapp.services import comparison


def _chosen(request: HttpRequest):
    return comparison.chosen(request.user, comparison.parse_ids(request.GET.getlist("ids")))


def _plain_error(error: comparison.ComparisonError) -> HttpResponse:
    """A message that may quote what was sent: plain text, never HTML."""
    return HttpResponse(str(error), status=error.status, content_type="text/plain; charset=utf-8")


def _payload(searches) -> dict:
    data = comparison.comparison(searches)
    rows = [{**{key: value for key, value in search.items() if key not in ("curve", "pareto")},
             "wall_text": display.duration(search["wall"])} for search in data["searches"]]
    return {"figures": comparison_figures(data), "rows": rows, "config": data["config"], "live": data["live"]}


@login_required
@require_GET
@gzip_page  # its figures' layouts repeat plotly's template: ~100 KiB that compress tenfold
def compare_page(request: HttpRequest) -> HttpResponse:
    try:
        searches = _chosen(request)
    except comparison.ComparisonError as error:
        return _plain_error(error)
    payload = _payload(searches)
    ids = ",".join(str(search.pk) for search in searches)
    rows = [{**row, "colour": colour(i)} for i, row in enumerate(payload["rows"])]
    return render(request, "dashboard/compare.html", {
        "searches": searches, "rows": rows, "config": payload["config"], "ids": ids, "payload": payload,
        "differences": sum(row["differs"] for row in payload["config"]),
    })


@api_login_required
@require_GET
@gzip_page
def compare_data(request: HttpRequest) -> JsonResponse:
    try:
        searches = _chosen(request)
    except comparison.ComparisonError as error:
        return json_error(str(error), status=error.status, field="ids")
    return JsonResponse(_payload(searches))


def _log(search) -> str:
    """A search's own CSV log, as its download gives it (each kind has its log)."""
    return kind_of(search.config).part("log")(search).content.decode()


@login_required
@require_GET
@gzip_page
def compare_csv(request: HttpRequest) -> HttpResponse:
    try:
        searches = _chosen(request)
    except comparison.ComparisonError as error:
        return _plain_error(error)
    out = io.StringIO()
    comparison.comparison_csv(searches, _log, out)
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    names = "-".join(str(search.pk) for search in searches)
    response["Content-Disposition"] = f'attachment; filename="compare-{names}.csv"'
    return response
