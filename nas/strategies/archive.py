"""What every strategy here shares: checked parameters, the budget, the archive of candidates and results,
dedup by genome key, and the JSON state.

A strategy subclasses :class:`ArchiveStrategy`, lists its :data:`~ArchiveStrategy.PARAMS`, and implements
:meth:`~ArchiveStrategy._propose` (the next genome, or ``None`` to wait); hooks ``_on_tell``, ``_finished``,
``_extra_state`` and ``_load_extra_state`` cover the rest.
"""
from __future__ import annotations

import copy
import dataclasses
import inspect
import itertools
import json
import math
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

from nas.spaces.base import Genome, SearchSpace
from nas.strategies.base import Candidate, Result, Strategy

#: How many known genomes in a row a strategy draws before it gives up on finding a new one.
DUPLICATE_RETRIES = 100
#: The version of :meth:`ArchiveStrategy.state_dict`'s layout.
STATE_FORMAT = 1


@dataclasses.dataclass(frozen=True)
class Param:
    """One constructor parameter: how it is checked, and how a web form shows it (see ``describe_params``)."""

    name: str
    type: str  #: ``"int"``, ``"float"``, or a name the strategy checks itself (``"objectives"``)
    help: str
    low: float | None = None  #: inclusive bounds; ``None``: unbounded on that side
    high: float | None = None
    optional: bool = False  #: ``None`` is allowed and means "no limit"
    label: str = ""  #: what a form calls it (default: the name, capitalised)

    def allowed(self) -> str:
        """The allowed values in words, for error messages."""
        kind = {"int": "an integer", "float": "a number"}.get(self.type, self.type)
        if self.low is not None and self.high is not None and self.type == "int":
            kind += f" >= {self.low} and <= {self.high}"
        elif self.low is not None and self.high is not None:
            kind += f" in [{self.low}, {self.high}]"
        elif self.low is not None:
            kind += f" >= {self.low}"
        return kind + (" or None" if self.optional else "")

    def check(self, value: Any) -> Any:
        """``value`` normalised (ints as ``int``, floats as ``float``), or ``ValueError`` naming the parameter."""
        if value is None and self.optional:
            return None
        if self.type not in ("int", "float"):
            return value
        if self.type == "int":  # 20.0 from a form or a JSON reader is 20; numpy integers are integers
            ok = as_int(value) is not None or (isinstance(value, float) and value.is_integer())
        else:
            ok = isinstance(value, (int, float, np.integer)) and math.isfinite(value)
        if not ok or isinstance(value, bool) or not self._in_range(value):
            raise ValueError(f"`{self.name}` must be {self.allowed()} ({self.name}={value!r}).")
        return int(value) if self.type == "int" else float(value)

    def _in_range(self, value: float) -> bool:
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)


#: Upper bounds of the strategies' sizes: generous for any search a cluster can run, small enough that one bad
#: request cannot make a loop hold billions of candidates.
MAX_POPULATION = 10_000
MAX_EVALUATIONS_LIMIT = 1_000_000
#: Seeds are 32-bit: every generator that takes one (numpy, torch) accepts them.
MAX_SEED = 2**32 - 1

POPULATION = Param("population", "int", "Individuals per generation (steady state: in the population).", low=2,
                   high=MAX_POPULATION, label="Population")
MAX_EVALUATIONS = Param("max_evaluations", "int", "How many candidates to evaluate in all.", low=1,
                        high=MAX_EVALUATIONS_LIMIT, label="Evaluation budget")


def as_int(value: Any) -> int | None:
    """``value`` as an ``int`` if it is a Python or numpy integer (not a bool), else ``None``."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    return None


@dataclasses.dataclass(frozen=True)
class Proposal:
    """A genome chosen for evaluation that has no id yet (ids are given in the order of ``ask``)."""

    genome: Genome
    key: str
    generation: int
    parents: tuple[str, ...] = ()
    operator: str = "sample"

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "parents": list(self.parents)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Proposal:
        return cls(**{**data, "parents": tuple(data["parents"])})


def clean_result(result: Result) -> Result:
    """``result`` with plain floats, as strict JSON allows: a non-finite fitness becomes a failure (fitness
    ``None``, reason ``"non-finite fitness"`` unless it already failed); non-finite objectives are dropped."""
    if not isinstance(result, Result):
        raise TypeError(f"`result` must be a nas.strategies.base.Result (result={result!r}).")
    fitness = None if result.fitness is None else float(result.fitness)
    failure = result.failure
    if fitness is not None and not math.isfinite(fitness):
        fitness, failure = None, failure or "non-finite fitness"
    elif fitness is None and failure is None:
        failure = "no fitness"
    objectives = {str(k): float(v) for k, v in result.objectives.items() if v is not None and math.isfinite(v)}
    return Result(fitness=fitness, objectives=objectives, failure=failure, pruned=bool(result.pruned))


def space_config(space: SearchSpace) -> dict[str, Any]:
    """``{"name": ..., **params}`` as JSON data: what a saved state remembers of its space."""
    return json.loads(json.dumps({"name": space.name, **space.params()}))


class ArchiveStrategy(Strategy):
    """A strategy that keeps every candidate and result, never proposes a known genome twice, and spends a
    budget of ``max_evaluations`` (each asked candidate counts once; results reused from the archive do not).

    When :data:`DUPLICATE_RETRIES` draws in a row give known genomes the space looks exhausted: the strategy
    stops proposing and is ``done`` once its pending candidates are told.
    """

    #: The constructor parameters besides ``space`` and ``seed``; defaults come from the signature.
    PARAMS: ClassVar[tuple[Param, ...]] = ()
    #: The archive's lists only grow (see :attr:`Strategy.APPEND_ONLY`).
    APPEND_ONLY: ClassVar[tuple[str, ...]] = ("candidates", "results")
    max_evaluations: int | None

    def __init__(self, space: SearchSpace, seed: int = 0, **params: Any) -> None:
        if not isinstance(space, SearchSpace):
            raise TypeError(f"`space` must be a SearchSpace (space={space!r}).")
        if as_int(seed) is None or not 0 <= seed <= MAX_SEED:
            raise ValueError(f"`seed` must be an integer in [0, {MAX_SEED}] (seed={seed!r}).")
        self.space = space
        self.seed = int(seed)
        self.params = self.check_params(params)
        for name, value in self.params.items():
            setattr(self, name, value)
        self._rng = np.random.default_rng(self.seed)
        self._candidates: list[Candidate] = []
        self._results: dict[int, Result] = {}
        # The JSON rows of the candidates and results already saved once: both only grow, so state_dict()
        # converts each row once, not the whole archive at every save (a big search saves after every result).
        self._candidate_rows: list[dict[str, Any]] = []
        self._result_rows: list[list[Any]] = []
        self._ids: dict[str, int] = {}
        self._exhausted = False

    # --- parameters -------------------------------------------------------------------------------------

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> dict[str, Any]:
        """Every parameter checked and normalised, in :data:`PARAMS` order; ``ValueError`` names a bad one."""
        known = {param.name: param for param in cls.PARAMS}
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise ValueError(
                f"The {cls.name!r} strategy has no parameter {', '.join(map(repr, unknown))}; "
                f"its parameters are {', '.join(known) or 'none'} (params={params!r})."
            )
        defaults = cls.default_params()
        return {name: param.check(params.get(name, defaults[name])) for name, param in known.items()}

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        """``{name: default}`` for every parameter, from the constructor's signature."""
        signature = inspect.signature(cls.__init__).parameters
        return {param.name: signature[param.name].default for param in cls.PARAMS}

    @classmethod
    def describe_params(cls) -> list[dict[str, Any]]:
        """JSON descriptions of the parameters (name, type, default, low, high, optional, help) for a form."""
        defaults = cls.default_params()
        described = [{**dataclasses.asdict(param), "label": param.label or param.name.replace("_", " ").capitalize(),
                      "default": defaults[param.name]} for param in cls.PARAMS]
        return json.loads(json.dumps(described))

    # --- ask / tell ---------------------------------------------------------------------------------------

    def ask(self, n: int) -> list[Candidate]:
        if as_int(n) is None or n < 0:
            raise ValueError(f"`n` must be an integer >= 0 (n={n!r}).")
        n = int(n)
        asked: list[Candidate] = []
        while len(asked) < n and self._budget_left() and not self._exhausted:
            proposal = self._propose()
            if proposal is None:
                break
            candidate = Candidate(id=len(self._candidates), **dataclasses.asdict(proposal))
            self._candidates.append(candidate)
            self._ids[candidate.key] = candidate.id
            asked.append(dataclasses.replace(candidate, genome=copy.deepcopy(candidate.genome)))
        return asked

    def tell(self, candidate_id: int, result: Result) -> None:
        """Record ``result`` (cleaned by :func:`clean_result`); ``KeyError`` for an id never asked."""
        index = as_int(candidate_id)
        if index is None or not 0 <= index < len(self._candidates):
            raise KeyError(
                f"No candidate with id {candidate_id!r} was asked of this {self.name!r} strategy "
                f"(ids so far: 0 to {len(self._candidates) - 1})."
            )
        if index in self._results:
            return
        self._results[index] = clean_result(result)
        self._on_tell(self._candidates[index], self._results[index])

    @property
    def done(self) -> bool:
        return not self.pending and (self._exhausted or not self._budget_left() or self._finished())

    def planned(self) -> int | None:
        if self.done or self._exhausted:
            return len(self._candidates)
        bounds = [b for b in (self.max_evaluations, self._planned_bound()) if b is not None]
        return max(min(bounds), len(self._candidates)) if bounds else None

    def _planned_bound(self) -> int | None:
        """A bound of the strategy's own on the candidates it will ask (e.g. generations x population)."""
        return None

    @property
    def evaluations(self) -> int:
        """How many candidates were asked: what counts against ``max_evaluations``."""
        return len(self._candidates)

    @property
    def pending(self) -> list[int]:
        """The ids asked but not yet told."""
        return [c.id for c in self._candidates if c.id not in self._results]

    def sort_key(self, result: Result) -> tuple[float, ...]:
        """What :meth:`best` sorts by, larger first."""
        return (result.score(),)

    def best(self, k: int | None = 1) -> list[tuple[Candidate, Result]]:
        """The ``k`` best successful candidates (all of them for ``None``), best first; ties by id."""
        if k is not None and (as_int(k) is None or k < 0):
            raise ValueError(f"`k` must be an integer >= 0 or None (k={k!r}).")
        told = [(c, self._results[c.id]) for c in self._candidates if c.id in self._results]
        ranked = sorted(((c, r) for c, r in told if r.ok), key=lambda cr: self.sort_key(cr[1]), reverse=True)
        return ranked[:k]

    # --- for subclasses -----------------------------------------------------------------------------------

    def _propose(self) -> Proposal | None:
        """The next genome to evaluate, or ``None`` to hand out nothing now (set ``_exhausted`` to stop)."""
        raise NotImplementedError

    def _on_tell(self, candidate: Candidate, result: Result) -> None:
        """Called once per candidate, after its result is recorded."""

    def _finished(self) -> bool:
        """True once a budget of the strategy's own (e.g. generations) is spent."""
        return False

    def _budget_left(self) -> bool:
        return self.max_evaluations is None or len(self._candidates) < self.max_evaluations

    def _known(self, key: str) -> bool:
        """True for a key asked before (pending or evaluated)."""
        return key in self._ids

    def _result_of(self, key: str) -> Result | None:
        """The result for ``key``, ``None`` while it is pending or never asked."""
        index = self._ids.get(key)
        return None if index is None else self._results.get(index)

    def _genome_of(self, key: str) -> Genome:
        return self._candidates[self._ids[key]].genome

    def _proposal(
        self, genome: Genome, generation: int, parents: tuple[str, ...] = (), operator: str = "sample"
    ) -> Proposal:
        return Proposal(genome, self.space.key(genome), generation, parents, operator)

    def _samples(self, generation: int) -> Iterator[Proposal]:
        while True:
            yield self._proposal(self.space.sample(self._rng), generation)

    def _first_new(self, attempts: Iterator[Proposal]) -> Proposal | None:
        """The first of at most ``DUPLICATE_RETRIES + 1`` attempts whose key is new; ``None`` marks the space
        as exhausted."""
        for proposal in itertools.islice(attempts, DUPLICATE_RETRIES + 1):
            if not self._known(proposal.key):
                return proposal
        self._exhausted = True
        return None

    # --- state --------------------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The strategy's state as JSON data. Its candidate and result rows are shared with the next calls'
        (each converted once): serialise the state, do not edit it in place."""
        self._candidate_rows.extend(c.to_dict() for c in self._candidates[len(self._candidate_rows):])
        told = itertools.islice(self._results.items(), len(self._result_rows), None)
        self._result_rows.extend([i, r.to_dict()] for i, r in told)
        rng = self._rng.bit_generator.state
        return {
            "name": self.name,
            "format": STATE_FORMAT,
            "space": space_config(self.space),
            "seed": self.seed,
            "params": json.loads(json.dumps(self.params)),
            # 128-bit integers as strings: JSON readers that use doubles (JavaScript, some databases) round them.
            "rng": {**rng, "state": {name: str(value) for name, value in rng["state"].items()}},
            "candidates": list(self._candidate_rows),
            "results": list(self._result_rows),  # in the order they were told
            "exhausted": self._exhausted,
            "strategy": self._extra_state(),
        }

    @classmethod
    def from_state(cls, space: SearchSpace, state: dict[str, Any]) -> ArchiveStrategy:
        if state.get("name") != cls.name or state.get("format") != STATE_FORMAT:
            raise ValueError(
                f"This state is not a {cls.name!r} state of format {STATE_FORMAT} "
                f"(name={state.get('name')!r}, format={state.get('format')!r})."
            )
        if state["space"] != space_config(space):
            raise ValueError(f"The state was saved for the space {state['space']!r}, not {space_config(space)!r}.")
        strategy = cls(space, state["seed"], **state["params"])
        rng = state["rng"]
        strategy._rng.bit_generator.state = {**rng, "state": {k: int(v) for k, v in rng["state"].items()}}
        strategy._candidates = [Candidate.from_dict(c) for c in state["candidates"]]
        strategy._ids = {c.key: c.id for c in strategy._candidates}
        strategy._results = {int(i): Result.from_dict(r) for i, r in state["results"]}
        strategy._exhausted = bool(state["exhausted"])
        strategy._load_extra_state(state["strategy"])
        return strategy

    def _extra_state(self) -> dict[str, Any]:
        """The subclass's own state, as JSON data."""
        return {}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`_extra_state` saved."""
