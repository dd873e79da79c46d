"""Regularized (aging) evolution, Real et al. 2019: steady state, tournament selection, the oldest dies.

Seed 004 proposes steady-state evolution so that outstanding evaluations never block new candidates: there is
no generation barrier here, and ``ask(n)`` returns ``n`` candidates while the budget lasts.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from nas.operators.selection import oldest, tournament
from nas.spaces.base import SearchSpace
from nas.strategies.archive import MAX_EVALUATIONS, MAX_POPULATION, POPULATION, ArchiveStrategy, Param, Proposal
from nas.strategies.base import Candidate, Result

SAMPLE_SIZE = Param("sample_size", "int", "Tournament size: members drawn to pick each parent.", low=1,
                    high=MAX_POPULATION, label="Tournament size")


class RegularizedEvolution(ArchiveStrategy):
    """Aging evolution over a population of the most recently born successful individuals.

    - While fewer than ``population`` results are in (or no result succeeded yet), candidates are sampled:
      the first ``population`` of them, and more while those are still being evaluated, so no worker waits.
    - After that, each candidate is a mutant of the winner of a tournament of ``sample_size`` members drawn
      without replacement from the population; a mutant whose genome is known is replaced by a fresh
      tournament and mutation, up to ``DUPLICATE_RETRIES`` times, then the space counts as exhausted.
    - A told result joins the population if it succeeded (a failed one would only push out a working one);
      once the population exceeds ``population``, the oldest member by birth (candidate id, i.e. the order of
      ``ask``) is dropped, so a slow evaluation does not buy its individual a longer life.

    Args:
        space: the space to search.
        seed: the seed of the strategy's random generator.
        population: the population size P (default 20).
        sample_size: the tournament size S (default 5; at most ``population``).
        max_evaluations: the budget (default 400).
    """

    name = "regularized"
    PARAMS: ClassVar[tuple[Param, ...]] = (POPULATION, SAMPLE_SIZE, MAX_EVALUATIONS)
    population: int
    sample_size: int
    max_evaluations: int

    def __init__(
        self, space: SearchSpace, seed: int = 0, *, population: int = 20, sample_size: int = 5,
        max_evaluations: int = 400,
    ) -> None:
        super().__init__(
            space, seed, population=population, sample_size=sample_size, max_evaluations=max_evaluations
        )
        if self.sample_size > self.population:
            raise ValueError(
                f"`sample_size` must be smaller than or equal to `population` "
                f"(sample_size={self.sample_size}, population={self.population})."
            )
        self._population: list[int] = []  # ids of the living members, in the order they joined

    @property
    def members(self) -> list[str]:
        """The keys of the current population, in the order its members joined."""
        return [self._candidates[i].key for i in self._population]

    def _propose(self) -> Proposal | None:
        generation = len(self._candidates) // self.population
        if len(self._results) < self.population or not self._population:
            return self._first_new(self._samples(generation))
        return self._first_new(self._mutants(generation))

    def _mutants(self, generation: int) -> Iterator[Proposal]:
        while True:
            scores = [self._results[i].score() for i in self._population]
            parent = self._candidates[self._population[tournament(scores, self.sample_size, self._rng)]]
            child = self.space.mutate(parent.genome, self._rng)
            yield self._proposal(child, generation, (parent.key,), "mutation")

    def _on_tell(self, candidate: Candidate, result: Result) -> None:
        if result.ok:
            self._population.append(candidate.id)
            if len(self._population) > self.population:
                self._population.pop(oldest(self._population))

    def _extra_state(self) -> dict[str, Any]:
        return {"population": list(self._population)}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self._population = list(state["population"])
