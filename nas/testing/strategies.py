"""The contract every search strategy passes, in the style of optuna's ``optuna/testing/pytest_samplers.py``.

A test module joins it by subclassing :class:`StrategyContract` and providing two pytest fixtures:

- ``space``: the :class:`~nas.spaces.base.SearchSpace` to search (parametrize it to cover several);
- ``make_strategy``: a callable ``(space, seed) -> Strategy`` with a small finite budget (parametrize it to
  cover several strategies).

Runs are driven by :func:`drive`: a deterministic result per candidate (:func:`evaluate`, every fourth id
fails) and a deterministic ask/tell schedule that asks 3, 2, 1, 4, 2, ... and tells about half of the
outstanding candidates each step, newest first and out of order, so candidates are pending across steps.
It imports no pytest, so ``nas`` keeps to the standard library and numpy.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Collection
from typing import Any, Callable

import numpy as np

from nas.operators.crossover import one_point_crossover
from nas.operators.mutation import resample_genes
from nas.spaces.base import Choose, Decision, Genome, GenomeError, SearchSpace
from nas.strategies.base import OPERATORS, Candidate, Result, Strategy

#: How many to ask at each step of :func:`drive`, in a cycle.
SCHEDULE = (3, 2, 1, 4, 2)
#: A run that is not ``done`` after this many steps is stuck.
MAX_STEPS = 5_000

MakeStrategy = Callable[[SearchSpace, int], Strategy]


class IntSpace(SearchSpace):
    """A toy space: ``{"genes": [g0, g1, ...]}``, ``genes`` integers each in ``[0, values)``.

    ``IntSpace(2, 3)`` holds 9 genomes: small enough to exhaust.
    """

    name = "ints"

    def __init__(self, genes: int = 6, values: int = 4) -> None:
        if genes < 1 or values < 2:
            raise ValueError(f"`genes` must be >= 1 and `values` >= 2 (genes={genes}, values={values}).")
        self.genes, self.values = genes, values

    def sample(self, rng: np.random.Generator) -> Genome:
        return {"genes": [int(v) for v in rng.integers(self.values, size=self.genes)]}

    def mutate(self, genome: Genome, rng: np.random.Generator) -> Genome:
        choices = [list(range(self.values))] * self.genes
        return {"genes": resample_genes(genome["genes"], choices, 1 / self.genes, rng)}

    def crossover(self, a: Genome, b: Genome, rng: np.random.Generator) -> tuple[Genome, Genome]:
        first, second = one_point_crossover(a["genes"], b["genes"], rng)
        return {"genes": first}, {"genes": second}

    def validate(self, genome: Genome) -> Genome:
        if not isinstance(genome, dict) or set(genome) != {"genes"}:
            raise GenomeError("genome", genome, 'a dict {"genes": [...]}')
        genes = genome["genes"]
        if not isinstance(genes, list) or len(genes) != self.genes:
            raise GenomeError("genes", genes, f"a list of {self.genes} integers")
        for i, gene in enumerate(genes):
            if type(gene) is not int or not 0 <= gene < self.values:
                raise GenomeError(f"genes[{i}]", gene, f"an integer in [0, {self.values - 1}]")
        return genome

    def describe(self, genome: Genome) -> str:
        return " ".join(map(str, genome["genes"]))

    def flatten(self, genome: Genome) -> dict[str, int | float | str]:
        return {f"g{i}": gene for i, gene in enumerate(genome["genes"])}

    def params(self) -> dict[str, Any]:
        return {"genes": self.genes, "values": self.values}

    def decisions(self) -> list[Decision]:
        return [Decision(f"g{i}", tuple(range(self.values))) for i in range(self.genes)]

    def compose(self, choose: Choose) -> Genome:
        return {"genes": [choose(decision) for decision in self.decisions()]}

    def spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": f"{self.genes} integers in [0, {self.values - 1}] (a toy space for tests)",
            "params": self.params(),
            "size": self.values**self.genes,
        }


def evaluate(candidate: Candidate, fail_every: int = 4, prune_every: int = 0) -> Result:
    """A deterministic result: ids ``fail_every - 1, 2 * fail_every - 1, ...`` fail (``0``: none do); the others
    get a fitness in ``[0, 1)`` and objectives ``accuracy`` (the fitness) and ``params`` from the genome's key.
    With ``prune_every``, ids ``0, prune_every, 2 * prune_every, ...`` that do not fail are pruned: half the
    fitness (a partial curve's value), ``pruned=True``."""
    if fail_every and candidate.id % fail_every == fail_every - 1:
        return Result.failed("oom")
    digest = hashlib.sha256(candidate.key.encode()).digest()
    fitness = int.from_bytes(digest[:4], "big") / 2**32
    params = float(digest[4] * 1000 + digest[5])
    if prune_every and candidate.id % prune_every == 0:
        return Result(fitness=fitness / 2, objectives={"accuracy": fitness / 2, "params": params}, pruned=True)
    return Result(fitness=fitness, objectives={"accuracy": fitness, "params": params})


@dataclasses.dataclass
class Run:
    """What :func:`drive` saw: every candidate in the order asked, the strategy at the end, the steps taken."""

    asked: list[Candidate]
    strategy: Strategy
    steps: int
    planned: list[int | None] = dataclasses.field(default_factory=list)  #: ``strategy.planned()`` at each step


def round_trip(strategy: Strategy, space: SearchSpace) -> Strategy:
    """The strategy rebuilt from its state after a strict JSON round trip (as a database would store it)."""
    state = json.loads(json.dumps(strategy.state_dict(), allow_nan=False))
    return type(strategy).from_state(space, state)


def drive(
    strategy: Strategy, space: SearchSpace, fail_every: int = 4, resume_at: Collection[int] = (),
    prune_every: int = 0,
) -> Run:
    """Run ``strategy`` to ``done`` with :data:`SCHEDULE` and :func:`evaluate`; before each step in
    ``resume_at`` the strategy is replaced by :func:`round_trip` of itself, as after a crash."""
    asked: list[Candidate] = []
    outstanding: list[Candidate] = []
    planned: list[int | None] = []
    for step in range(MAX_STEPS):
        planned.append(strategy.planned())
        if strategy.done:
            assert not outstanding, f"{strategy.name} is done with candidates still outstanding: {outstanding}"
            return Run(asked, strategy, step, planned)
        if step in resume_at:
            strategy = round_trip(strategy, space)
        batch = strategy.ask(SCHEDULE[step % len(SCHEDULE)])
        asked += batch
        outstanding += batch
        if not outstanding:  # an ask may find the space exhausted, and so end the run
            assert strategy.done, f"{strategy.name} is not done, yet asks for nothing and waits on nothing"
            continue
        order = outstanding[::-2] + outstanding[-2::-2]  # newest first, every other one, then the rest
        told = order[: max(1, len(order) // 2)] if batch else order
        for candidate in told:
            strategy.tell(candidate.id, evaluate(candidate, fail_every, prune_every))
        outstanding = [c for c in outstanding if c not in told]
    raise AssertionError(f"{strategy.name} is not done after {MAX_STEPS} steps")


def _sort_key(strategy: Strategy) -> Callable[[Result], Any]:
    return getattr(strategy, "sort_key", lambda result: (result.score(),))


class StrategyContract:
    """Checks for any :class:`Strategy`; subclass it in a test module that provides ``space`` and
    ``make_strategy`` fixtures."""

    def test_ids_count_up_and_lineage_is_complete(self, space: SearchSpace, make_strategy: MakeStrategy) -> None:
        run = drive(make_strategy(space, 0), space)
        assert run.asked, "the strategy asked for nothing"
        assert [c.id for c in run.asked] == list(range(len(run.asked)))
        seen: set[str] = set()
        for c in run.asked:
            assert c.operator in OPERATORS, c
            assert (c.operator == "sample") == (not c.parents), c
            assert set(c.parents) <= seen, f"parents of {c} were never asked"
            assert type(c.generation) is int and c.generation >= 0, c
            seen.add(c.key)

    def test_genomes_are_valid_and_never_repeated(self, space: SearchSpace, make_strategy: MakeStrategy) -> None:
        run = drive(make_strategy(space, 0), space)
        for c in run.asked:
            assert space.validate(c.genome) == c.genome
            assert c.key == space.key(c.genome)
        keys = [c.key for c in run.asked]
        assert len(keys) == len(set(keys)), "a genome was asked twice"

    def test_same_seed_same_run(self, space: SearchSpace, make_strategy: MakeStrategy) -> None:
        first, again = drive(make_strategy(space, 5), space), drive(make_strategy(space, 5), space)
        assert [c.to_dict() for c in first.asked] == [c.to_dict() for c in again.asked]
        other = drive(make_strategy(space, 6), space)
        assert [c.key for c in other.asked] != [c.key for c in first.asked]

    def test_state_round_trips_through_strict_json(self, space: SearchSpace, make_strategy: MakeStrategy) -> None:
        strategy = make_strategy(space, 1)
        for n in (0, 3, 5):
            for c in strategy.ask(n)[::2]:
                strategy.tell(c.id, evaluate(c))
            state = strategy.state_dict()
            assert state["name"] == strategy.name
            assert round_trip(strategy, space).state_dict() == json.loads(json.dumps(state, allow_nan=False))

    def test_resume_continues_the_uninterrupted_run(self, space: SearchSpace, make_strategy: MakeStrategy) -> None:
        plain = drive(make_strategy(space, 2), space)
        final = json.dumps(plain.strategy.state_dict())
        for resume_at in ((1,), (2, 6), (3, 4, 9, 14), range(0, MAX_STEPS, 2)):
            resumed = drive(make_strategy(space, 2), space, resume_at=resume_at)
            assert [c.to_dict() for c in resumed.asked] == [c.to_dict() for c in plain.asked], resume_at
            assert json.dumps(resumed.strategy.state_dict()) == final, resume_at

    def test_failures_are_tolerated_and_never_parents(self, space: SearchSpace, make_strategy: MakeStrategy) -> None:
        run = drive(make_strategy(space, 3), space, fail_every=4)
        failed = {c.key for c in run.asked if not evaluate(c).ok}
        assert failed, "the schedule should have failed some candidates"
        for c in run.asked:
            assert not failed & set(c.parents), f"{c} was bred from a failed candidate"
        assert all(result.ok for _, result in run.strategy.best(None))

    def test_pruned_results_are_kept_as_pruned_and_resume(
        self, space: SearchSpace, make_strategy: MakeStrategy
    ) -> None:
        """A pruned result (early-stopped, fitness predicted or partial) is a success the strategy keeps as
        pruned through its JSON state; a run with pruned results ends and resumes exactly."""
        plain = drive(make_strategy(space, 8), space, prune_every=3)
        told = {c.id: r for c, r in plain.strategy.best(None)}
        pruned = [c.id for c in plain.asked if evaluate(c, 4, 3).pruned]
        assert pruned, "the schedule should have pruned some candidates"
        for cid in pruned:
            if cid in told:
                assert told[cid].pruned and told[cid].ok
        state = json.loads(json.dumps(plain.strategy.state_dict(), allow_nan=False))
        assert any(r.get("pruned") for _, r in state["results"]), "the state lost the pruned flag"
        resumed = drive(make_strategy(space, 8), space, resume_at=(2, 5), prune_every=3)
        assert [c.to_dict() for c in resumed.asked] == [c.to_dict() for c in plain.asked]
        assert json.dumps(resumed.strategy.state_dict()) == json.dumps(plain.strategy.state_dict())

    def test_a_run_where_everything_fails_still_ends(self, space: SearchSpace, make_strategy: MakeStrategy) -> None:
        run = drive(make_strategy(space, 4), space, fail_every=1)
        assert run.asked and run.strategy.best(None) == []

    def test_best_is_successful_sorted_and_cut(self, space: SearchSpace, make_strategy: MakeStrategy) -> None:
        run = drive(make_strategy(space, 0), space)
        key = _sort_key(run.strategy)
        ranked = run.strategy.best(None)
        assert ranked and all(result.ok for _, result in ranked)
        assert [key(r) for _, r in ranked] == sorted((key(r) for _, r in ranked), reverse=True)
        for k in (0, 1, 3):
            assert run.strategy.best(k) == ranked[:k]
        assert run.strategy.best()[0] == ranked[0]
        asked = {c.id: c for c in run.asked}
        for candidate, result in ranked:
            assert asked[candidate.id] == candidate and result == evaluate(candidate)

    def test_budget_is_kept_and_done_asks_nothing(self, space: SearchSpace, make_strategy: MakeStrategy) -> None:
        run = drive(make_strategy(space, 0), space)
        limit = getattr(run.strategy, "max_evaluations", None)
        assert limit is None or len(run.asked) <= limit
        assert run.strategy.done and run.strategy.ask(5) == [] and run.strategy.done

    def test_planned_is_a_bound_that_ends_exact(self, space: SearchSpace, make_strategy: MakeStrategy) -> None:
        """``planned()`` never promises fewer candidates than the run asks, and is exact once done (a progress
        bar's total: a finished search shows 100%)."""
        run = drive(make_strategy(space, 0), space)
        assert run.planned[-1] == len(run.asked)
        assert all(value is None or value >= len(run.asked) for value in run.planned), run.planned

    def test_tell_rejects_unknown_ids_and_ignores_repeats(
        self, space: SearchSpace, make_strategy: MakeStrategy
    ) -> None:
        strategy = make_strategy(space, 0)
        for bad in (0, -1, 10**6):
            try:
                strategy.tell(bad, Result(fitness=1.0))
            except KeyError as error:
                assert str(bad) in str(error)
            else:
                raise AssertionError(f"tell({bad}) of an id never asked did not raise KeyError")
        (candidate,) = strategy.ask(1)
        strategy.tell(candidate.id, Result(fitness=0.25, objectives={"accuracy": 0.25, "params": 1.0}))
        before = strategy.state_dict()
        strategy.tell(candidate.id, Result(fitness=0.75, objectives={"accuracy": 0.75, "params": 1.0}))
        assert strategy.state_dict() == before

    def test_ask_of_zero_is_empty_and_negative_is_refused(
        self, space: SearchSpace, make_strategy: MakeStrategy
    ) -> None:
        strategy = make_strategy(space, 0)
        assert strategy.ask(0) == []
        try:
            strategy.ask(-1)
        except ValueError as error:
            assert "-1" in str(error)
        else:
            raise AssertionError("ask(-1) did not raise ValueError")

    def test_an_exhausted_space_ends_the_run(self, make_strategy: MakeStrategy) -> None:
        tiny = IntSpace(genes=2, values=3)
        run = drive(make_strategy(tiny, 0), tiny)
        keys = [c.key for c in run.asked]
        assert len(keys) == len(set(keys)) <= 9
