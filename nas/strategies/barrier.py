"""The generation barrier shared by the genetic algorithm and NSGA-II.

A generation is a list of ``population`` member keys. Generation 0 is sampled; each later one is bred by the
subclass (``_breed``) once every member of the open generation has a result. ``ask`` hands out only the open
generation's new genomes, so it returns fewer than asked (even none) while the generation waits for results.

Members that are not new genomes are reused, not evaluated again: an unchanged copy of a parent (no crossover
and no mutation drawn) and a child whose genome is still known after :data:`DUPLICATE_RETRIES` further
mutations take the known result (or share the pending twin's). A bred generation without a single new genome
ends the search: the space looks exhausted.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from nas.spaces.base import SearchSpace
from nas.strategies.archive import DUPLICATE_RETRIES, MAX_EVALUATIONS_LIMIT, ArchiveStrategy, Param, Proposal

#: The most generations a generational search may plan.
MAX_GENERATIONS = 10_000

GENERATIONS = Param(
    "generations", "int",
    "Generations to evaluate, the sampled generation 0 included; None: no limit (then set max_evaluations).",
    low=1, high=MAX_GENERATIONS, optional=True, label="Generations",
)
OPTIONAL_MAX_EVALUATIONS = Param(
    "max_evaluations", "int",
    "Candidates to evaluate at most (reused results do not count); None: no limit (then set generations).",
    low=1, high=MAX_EVALUATIONS_LIMIT, optional=True, label="Evaluation budget",
)
P_CROSSOVER = Param("p_crossover", "float", "Probability that a pair of parents is recombined.", low=0, high=1,
                    label="Crossover rate")
P_MUTATION = Param("p_mutation", "float", "Probability that a child is mutated (per individual).", low=0, high=1,
                   label="Mutation rate")


def with_mutation(operator: str | None) -> str:
    """The lineage operator of a child after one more mutation."""
    return "crossover+mutation" if operator in ("crossover", "crossover+mutation") else "mutation"


class GenerationalStrategy(ArchiveStrategy):
    """A strategy with a generation barrier; subclasses implement ``_breed(previous)``."""

    population: int
    generations: int | None
    p_crossover: float
    p_mutation: float

    def __init__(self, space: SearchSpace, seed: int = 0, **params: Any) -> None:
        super().__init__(space, seed, **params)
        if self.generations is None and self.max_evaluations is None:
            raise ValueError(
                f"At least one of `generations` and `max_evaluations` must be set, or the {self.name!r} search "
                f"never ends (generations=None, max_evaluations=None)."
            )
        self._generation = -1
        self._members: list[str] = []
        self._queue: list[Proposal] = []

    @property
    def generation(self) -> int:
        """The open generation (-1 before the first ``ask``)."""
        return self._generation

    @property
    def members(self) -> list[str]:
        """The keys of the open generation's members (reused ones included, some maybe not asked yet)."""
        return list(self._members)

    def _breed(self, previous: list[str]) -> None:
        """Fill the open generation (``_members``, via ``_add`` and ``_breed_pair``) from the complete
        ``previous`` one."""
        raise NotImplementedError

    def _propose(self) -> Proposal | None:
        if not self._queue:
            if self._last_generation() or not all(self._result_of(key) is not None for key in self._members):
                return None
            previous, self._members = self._members, []
            self._generation += 1
            if self._generation == 0:
                for _ in range(self.population):
                    self._add(self._samples(0))
            else:
                self._breed(previous)
            if not self._queue:
                self._exhausted = True
                return None
        return self._queue.pop(0)

    def _last_generation(self) -> bool:
        return self.generations is not None and self._generation >= self.generations - 1

    def _finished(self) -> bool:
        return self._last_generation() and not self._queue

    def _planned_bound(self) -> int | None:
        """Asked so far, the open generation's new genomes still to ask, and a whole population for each
        generation to come (its children that repeat a known genome will reuse results instead)."""
        if self.generations is None:
            return None
        return len(self._candidates) + len(self._queue) + (self.generations - 1 - self._generation) * self.population

    def _known(self, key: str) -> bool:
        return super()._known(key) or any(proposal.key == key for proposal in self._queue)

    def _score(self, key: str) -> float:
        return self._result_of(key).score()

    def _add(self, attempts: Iterator[Proposal]) -> None:
        """Make the first attempt with a new key a member (to be asked); after ``DUPLICATE_RETRIES`` known
        ones, the last attempt joins as a reused member."""
        for proposal in itertools.islice(attempts, DUPLICATE_RETRIES + 1):
            if not self._known(proposal.key):
                self._queue.append(proposal)
                break
        self._members.append(proposal.key)

    def _mutations(self, proposal: Proposal) -> Iterator[Proposal]:
        """``proposal``, then its mutant, the mutant's mutant, and so on."""
        while True:
            yield proposal
            genome = self.space.mutate(proposal.genome, self._rng)
            proposal = self._proposal(genome, proposal.generation, proposal.parents, with_mutation(proposal.operator))

    def _breed_pair(self, a: str, b: str) -> None:
        """Add the two children of the members ``a`` and ``b`` (as many as there is room for): crossover with
        probability ``p_crossover``, then each child mutated with probability ``p_mutation``. An unchanged
        copy reuses its parent; a known genome is mutated again (see :meth:`_add`)."""
        genome_a, genome_b = self._genome_of(a), self._genome_of(b)
        if self._rng.random() < self.p_crossover:
            parents = (a, b) if a != b else (a,)
            children = [(child, parents, "crossover") for child in self.space.crossover(genome_a, genome_b, self._rng)]
        else:
            children = [(genome_a, (a,), None), (genome_b, (b,), None)]
        for genome, parents, operator in children[: self.population - len(self._members)]:
            if self._rng.random() < self.p_mutation:
                genome, operator = self.space.mutate(genome, self._rng), with_mutation(operator)
            if operator is None:
                self._members.append(parents[0])
            else:
                self._add(self._mutations(self._proposal(genome, self._generation, parents, operator)))

    def _extra_state(self) -> dict[str, Any]:
        return {
            "generation": self._generation,
            "members": list(self._members),
            "queue": [proposal.to_dict() for proposal in self._queue],
        }

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self._generation = state["generation"]
        self._members = list(state["members"])
        self._queue = [Proposal.from_dict(proposal) for proposal in state["queue"]]
