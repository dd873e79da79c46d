"""The order of every "best k" of a search: by fitness, best first, ties by number (the control loop keeps the
weights of its best by it, the downloads and the pages show the best by it)."""
from __future__ import annotations

from django.db.models import QuerySet

from webapp.searches.models import Individual, Search


def ranked(search: Search | int) -> QuerySet:
    """The successful individuals, best first (ties by number)."""
    return (Individual.objects.filter(search=search, status=Individual.Status.DONE, fitness__isnull=False)
            .order_by("-fitness", "number"))


def best_individuals(search: Search | int, k: int) -> list[Individual]:
    """The ``k`` best successful individuals, best first."""
    return list(ranked(search)[:k])
