"""Random search: every candidate is a fresh sample of the space. The baseline every other strategy must beat."""
from __future__ import annotations

from typing import ClassVar

from nas.spaces.base import SearchSpace
from nas.strategies.archive import MAX_EVALUATIONS, ArchiveStrategy, Param, Proposal


class RandomSearch(ArchiveStrategy):
    """Samples ``space`` until ``max_evaluations`` candidates were asked, skipping genomes already asked.

    No barrier: ``ask(n)`` returns ``n`` candidates while the budget lasts. Every candidate is generation 0.
    Once :data:`~nas.strategies.archive.DUPLICATE_RETRIES` samples in a row are known, the space is taken as
    exhausted and the search ends.

    Args:
        space: the space to sample.
        seed: the seed of the strategy's random generator.
        max_evaluations: the budget (default 400 = seed 000's 20 generations of 20).
    """

    name = "random"
    PARAMS: ClassVar[tuple[Param, ...]] = (MAX_EVALUATIONS,)
    max_evaluations: int

    def __init__(self, space: SearchSpace, seed: int = 0, *, max_evaluations: int = 400) -> None:
        super().__init__(space, seed, max_evaluations=max_evaluations)

    def _propose(self) -> Proposal | None:
        return self._first_new(self._samples(generation=0))
