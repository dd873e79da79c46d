"""Who may see what: a search belongs to its owner (staff see all); anyone else gets a 404, as if it did not
exist. Every view that takes a search id goes through :func:`owned_search`."""
from __future__ import annotations

import functools

from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404

from webapp.searches.models import Individual, Search
from webapp.services.queries import visible_searches


def owned_search(request, search_id: int, only: tuple[str, ...] | None = None) -> Search:
    """The search, if the request's user may see it (else 404). ``only``: the fields to load (a view called many
    times a second needs few; the row's JSON costs milliseconds to decode); any other is read when used."""
    searches = visible_searches(request.user).select_related("owner")
    # Never the strategy's state unless used (by resume): no page shows it.
    searches = searches.only("owner", *only) if only is not None else searches.defer("strategy_state")
    return get_object_or_404(searches, pk=search_id)


def owned_individual(request, search_id: int, number: int) -> Individual:
    search = owned_search(request, search_id)
    return get_object_or_404(Individual.objects.select_related("search"), search=search, number=number)


def api_login_required(view):
    """For the JSON API: 401 with a message instead of a redirect to the login page; 404s as JSON."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return JsonResponse({"error": "Sign in first (session cookie required)."}, status=401)
        try:
            return view(request, *args, **kwargs)
        except Http404:
            return JsonResponse({"error": "Not found."}, status=404)

    return wrapper
