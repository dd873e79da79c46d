"""Downloads: thin views over ``webapp.services.exports``; every one checks ownership first."""
from __future__ import annotations

import io
import json

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.views.decorators.gzip import gzip_page

from webapp.dashboard.access import owned_individual, owned_search
from webapp.searches.kinds import kind_of
from webapp.searches.models import Search
from webapp.services import exports


def _attachment(content, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
@gzip_page  # the logs compress ~5x; a browser or `curl --compressed` inflates them transparently
def individuals_csv(request: HttpRequest, search_id: int) -> HttpResponse:
    search = owned_search(request, search_id)
    return kind_of(search.config).part("log")(search)  # a weight search has generations, not individuals


def architecture_log(search: Search) -> HttpResponse:
    """Every individual of an architecture search as CSV."""
    out = io.StringIO()
    exports.individuals_csv(search, out)
    return _attachment(out.getvalue(), "text/csv; charset=utf-8", f"search-{search.pk}-individuals.csv")


@login_required
@gzip_page
def events_jsonl(request: HttpRequest, search_id: int) -> HttpResponse:
    search = owned_search(request, search_id)
    out = io.StringIO()
    exports.events_jsonl(search, out)
    return _attachment(out.getvalue(), "application/x-ndjson", f"search-{search.pk}-events.jsonl")


@login_required
def best_zip(request: HttpRequest, search_id: int) -> HttpResponse:
    search = owned_search(request, search_id)
    try:
        k = int(request.GET.get("k", "5"))
        if not 1 <= k <= 100:
            raise ValueError
    except ValueError:
        return HttpResponseBadRequest("`k` must be an integer in [1, 100].")
    out = io.BytesIO()
    exports.best_zip(search, k, out)
    return _attachment(out.getvalue(), "application/zip", f"search-{search.pk}-best-{k}.zip")


@login_required
def individual_genome(request: HttpRequest, search_id: int, number: int) -> HttpResponse:
    individual = owned_individual(request, search_id, number)
    document = exports.genome_document(individual.search, individual)
    return _attachment(json.dumps(document, indent=2), "application/json",
                       f"search-{search_id}-n{number}-genome.json")


@login_required
def individual_zip(request: HttpRequest, search_id: int, number: int) -> HttpResponse:
    individual = owned_individual(request, search_id, number)
    out = io.BytesIO()
    exports.individual_zip(individual.search, individual, out)
    return _attachment(out.getvalue(), "application/zip", f"search-{search_id}-n{number}.zip")
