"""NSGA-II (Deb et al. 2002): multi-objective evolution by non-dominated sorting and crowding distance,
e.g. accuracy up and parameters down."""
from __future__ import annotations

import math
from typing import Any, ClassVar

from nas.operators.selection import crowding_distance, non_dominated_sort, tournament
from nas.spaces.base import SearchSpace
from nas.strategies.archive import POPULATION, Param
from nas.strategies.base import Candidate, Result
from nas.strategies.barrier import (
    GENERATIONS,
    OPTIONAL_MAX_EVALUATIONS,
    P_CROSSOVER,
    P_MUTATION,
    GenerationalStrategy,
)
from nas.strategies.objectives import OBJECTIVES, check_objectives, first_front, oriented


class NSGA2(GenerationalStrategy):
    """NSGA-II with a generation barrier, over the objectives named in ``objectives``.

    Generation 0 is sampled. Then each generation of offspring is bred from the parent population by binary
    tournaments on (front rank, crowding distance), computed within the parent population; the next parent
    population is the best ``population`` distinct individuals of parents and offspring, front by front, the
    last front cut by crowding distance (elitist by construction). A failed result, or one without every
    objective, is dominated by everything, and is only drawn as a parent when no parent succeeded.

    Args:
        space: the space to search.
        seed: the seed of the strategy's random generator.
        objectives: ``[[name, "max" | "min"], ...]`` (default accuracy up, params down).
        population: parents and offspring per generation (default 20).
        generations: generations to evaluate, generation 0 included (default 20); ``None``: no limit.
        p_crossover: probability that a pair is recombined (default 0.9, as in Deb et al.).
        p_mutation: probability that a child is mutated (default 1.0: the space's mutation changes few genes).
        max_evaluations: candidates to evaluate at most; ``None``: no limit.
    """

    name = "nsga2"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        OBJECTIVES, POPULATION, GENERATIONS, P_CROSSOVER, P_MUTATION, OPTIONAL_MAX_EVALUATIONS
    )
    objectives: list[list[str]]

    def __init__(
        self,
        space: SearchSpace,
        seed: int = 0,
        *,
        objectives: list[list[str]] | tuple = (("accuracy", "max"), ("params", "min")),
        population: int = 20,
        generations: int | None = 20,
        p_crossover: float = 0.9,
        p_mutation: float = 1.0,
        max_evaluations: int | None = None,
    ) -> None:
        super().__init__(
            space, seed, objectives=check_objectives(objectives), population=population, generations=generations,
            p_crossover=p_crossover, p_mutation=p_mutation, max_evaluations=max_evaluations,
        )
        self._parents: list[str] = []

    def sort_key(self, result: Result) -> tuple[float, ...]:
        """The objectives oriented so that larger is better (``min`` ones negated); ``-inf`` for a failure."""
        return oriented(result, self.objectives)

    def best(self, k: int | None = None) -> list[tuple[Candidate, Result]]:
        """The first Pareto front of every successful candidate so far, sorted by the objectives in order
        (best first, ties by id), cut to its first ``k`` (the whole front for ``None``)."""
        return first_front(super().best(None), self.objectives, k)

    @property
    def parents(self) -> list[str]:
        """The keys of the current parent population."""
        return list(self._parents)

    def _rows(self, keys: list[str]) -> list[tuple[float, ...]]:
        return [self.sort_key(self._result_of(key)) for key in keys]

    def _survivors(self, keys: list[str]) -> list[str]:
        keys = list(dict.fromkeys(keys))
        rows = self._rows(keys)
        chosen: list[int] = []
        for front in non_dominated_sort(rows):
            room = self.population - len(chosen)
            if len(front) > room:
                distance = crowding_distance([rows[i] for i in front])
                front = [front[i] for i in sorted(range(len(front)), key=lambda i: -distance[i])[:room]]
            chosen += front
            if len(chosen) == self.population:
                break
        return [keys[i] for i in chosen]

    def _breed(self, previous: list[str]) -> None:
        self._parents = self._survivors(self._parents + previous)
        rows = self._rows(self._parents)
        fitness: list[tuple[int, float]] = [(0, 0.0)] * len(rows)
        for rank, front in enumerate(non_dominated_sort(rows)):
            for i, distance in zip(front, crowding_distance([rows[i] for i in front])):
                fitness[i] = (-rank, distance)
        pool = [i for i, row in enumerate(rows) if math.isfinite(row[0])] or list(range(len(rows)))
        while len(self._members) < self.population:
            a, b = (pool[tournament([fitness[i] for i in pool], 2, self._rng)] for _ in range(2))
            self._breed_pair(self._parents[a], self._parents[b])

    def _extra_state(self) -> dict[str, Any]:
        return {**super()._extra_state(), "parents": list(self._parents)}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        super()._load_extra_state(state)
        self._parents = list(state["parents"])
