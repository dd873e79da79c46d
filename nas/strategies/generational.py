"""Seed 000's genetic algorithm (EA-Pelee): generations of 20, roulette-wheel selection, crossover per pair
with probability 0.5, mutation per individual with probability 0.58, 20 generations."""
from __future__ import annotations

from typing import ClassVar

from nas.operators.selection import roulette_wheel
from nas.spaces.base import SearchSpace
from nas.strategies.archive import MAX_POPULATION, POPULATION, Param
from nas.strategies.barrier import (
    GENERATIONS,
    OPTIONAL_MAX_EVALUATIONS,
    P_CROSSOVER,
    P_MUTATION,
    GenerationalStrategy,
)

ELITISM = Param(
    "elitism", "int", "The best members copied unchanged into the next generation (seed 000 is silent).", low=0,
    high=MAX_POPULATION, label="Elitism",
)


class GenerationalGA(GenerationalStrategy):
    """A generational GA with a barrier: each generation is bred from the evaluated previous one.

    Breeding: the ``elitism`` best distinct successful members are kept as they are; the rest of the generation
    comes in pairs of children of two parents drawn by :func:`~nas.operators.selection.roulette_wheel` over the
    previous generation's fitness (failed members are never drawn while any member succeeded). Children that
    are unchanged copies reuse their parent's result, as seed 000's totals of about 230 evaluations for
    20 x 20 individuals suggest (see :mod:`nas.strategies.barrier`).

    Args:
        space: the space to search.
        seed: the seed of the strategy's random generator.
        population: individuals per generation (seed 000: 20).
        generations: generations to evaluate, generation 0 included (seed 000: T_max = 20); ``None``: no limit.
        p_mutation: probability that a child is mutated (seed 000: 0.58 per individual).
        p_crossover: probability that a pair is recombined (seed 000: 0.5 per pair).
        elitism: the best members copied into the next generation (default 1; must be below ``population``).
        max_evaluations: candidates to evaluate at most; ``None``: no limit.
    """

    name = "generational"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        POPULATION, GENERATIONS, P_MUTATION, P_CROSSOVER, ELITISM, OPTIONAL_MAX_EVALUATIONS
    )
    elitism: int

    def __init__(
        self,
        space: SearchSpace,
        seed: int = 0,
        *,
        population: int = 20,
        generations: int | None = 20,
        p_mutation: float = 0.58,
        p_crossover: float = 0.5,
        elitism: int = 1,
        max_evaluations: int | None = None,
    ) -> None:
        super().__init__(
            space, seed, population=population, generations=generations, p_mutation=p_mutation,
            p_crossover=p_crossover, elitism=elitism, max_evaluations=max_evaluations,
        )
        if self.elitism >= self.population:
            raise ValueError(
                f"`elitism` must be smaller than `population`, or no child is ever bred "
                f"(elitism={self.elitism}, population={self.population})."
            )

    def _breed(self, previous: list[str]) -> None:
        scores = [self._score(key) for key in previous]
        successful = dict.fromkeys(key for key in previous if self._result_of(key).ok)
        self._members.extend(sorted(successful, key=self._score, reverse=True)[: self.elitism])
        while len(self._members) < self.population:
            a, b = roulette_wheel(scores, 2, self._rng)
            self._breed_pair(previous[a], previous[b])
