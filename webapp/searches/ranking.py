"""The order of every "best k" of a search: by fitness, best first, ties by number (the control loop keeps the
weights of its best by it, the downloads and the pages show the best by it). A search that ended with a final
training (``final``) has its final runs first: the best of them is the search's result."""
from __future__ import annotations

from django.db.models import QuerySet

from webapp.searches.models import Individual, Search


def ranked(search: Search | int, role: str = Individual.Role.SEARCH) -> QuerySet:
    """The successful individuals of a role (the strategy's by default), best first (ties by number)."""
    return (Individual.objects.filter(search=search, role=role, status=Individual.Status.DONE,
                                      fitness__isnull=False)
            .order_by("-fitness", "number"))


def best_individuals(search: Search | int, k: int) -> list[Individual]:
    """The ``k`` best successful individuals, best first: the final runs, then the strategy's."""
    finals = list(ranked(search, Individual.Role.FINAL)[:k])
    return finals + list(ranked(search)[:k - len(finals)])
