"""The contract every search strategy fulfils: ask, tell, done, best, and a JSON state."""
from __future__ import annotations

import abc
import dataclasses
import math
from typing import Any, ClassVar

from nas.spaces.base import Genome, SearchSpace

#: How a candidate came to be: its lineage operator.
OPERATORS = ("sample", "mutation", "crossover", "crossover+mutation")


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One architecture the strategy wants evaluated, with its lineage."""

    id: int  #: assigned by the strategy, 0, 1, 2, ... in the order of ``ask``
    genome: Genome
    key: str  #: ``space.key(genome)``
    generation: int  #: the generation it belongs to (steady-state strategies: ``id // population``)
    parents: tuple[str, ...] = ()  #: keys of the parents, none for ``sample``
    operator: str = "sample"  #: one of :data:`OPERATORS`

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["parents"] = list(self.parents)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Candidate:
        return cls(**{**data, "parents": tuple(data.get("parents", ()))})


@dataclasses.dataclass(frozen=True)
class Result:
    """What an evaluation gave back: a fitness (higher is better) and named objectives, or a failure.

    A pruned result (``pruned=True``: a pruner stopped its training early) is a success whose fitness is an
    estimate: the pruner's predicted final value when it made one (``curve``), else the best value observed
    before the stop (``median``, ``asha``). Strategies rank and breed from it like any other result.
    """

    fitness: float | None = None
    objectives: dict[str, float] = dataclasses.field(default_factory=dict)
    failure: str | None = None  #: the reason when it failed (``oom``, ``diverged``, ``timeout``, ...)
    pruned: bool = False  #: stopped early by a pruner: ``fitness`` is predicted or partial

    @property
    def ok(self) -> bool:
        return self.failure is None and self.fitness is not None and math.isfinite(self.fitness)

    def score(self) -> float:
        """The fitness for selection: a failed result ranks below every successful one."""
        return float(self.fitness) if self.ok else -math.inf

    def to_dict(self) -> dict[str, Any]:
        """JSON data; ``pruned`` only when set, so states saved before the field existed stay as they were."""
        data = dataclasses.asdict(self)
        if not self.pruned:
            del data["pruned"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        return cls(**data)

    @classmethod
    def failed(cls, reason: str) -> Result:
        return cls(fitness=None, failure=reason)


class Strategy(abc.ABC):
    """Proposes candidates and learns from their results.

    A strategy owns all its randomness (a numpy ``Generator`` made from ``seed``) and all its state,
    so ``from_state(space, json.loads(json.dumps(s.state_dict())))`` continues exactly where ``s`` was.
    """

    name: ClassVar[str]
    #: The incremental-archive hook: keys of :meth:`state_dict` whose lists only ever grow (entries appended,
    #: never changed or removed). A store may save just the entries added since its last save and give
    #: :meth:`from_state` the whole lists back, so saving after every result costs the same at the 10,000th
    #: result as at the first. Empty: save the whole state every time.
    APPEND_ONLY: ClassVar[tuple[str, ...]] = ()
    #: What :meth:`beliefs` describes (``"policy"``, ``"densities"``), or ``None`` for a strategy that shows none.
    BELIEFS: ClassVar[str | None] = None

    @abc.abstractmethod
    def ask(self, n: int) -> list[Candidate]:
        """Up to ``n`` new candidates; fewer (even none) while it waits on results, e.g. at a generation barrier."""

    @abc.abstractmethod
    def tell(self, candidate_id: int, result: Result) -> None:
        """Record the result of a candidate returned by :meth:`ask`; a second tell for the same id is ignored."""

    @property
    @abc.abstractmethod
    def done(self) -> bool:
        """True once the budget is spent and every asked candidate has been told."""

    def planned(self) -> int | None:
        """How many candidates it will ask in all: exact once :attr:`done`, an upper bound before (candidates
        that turn out to be known genomes reuse results and are never asked); ``None`` when unknown."""
        return None

    @abc.abstractmethod
    def best(self, k: int = 1) -> list[tuple[Candidate, Result]]:
        """The best ``k`` evaluated candidates, best first (multi-objective: the Pareto front)."""

    def beliefs(self) -> dict[str, Any] | None:
        """What the strategy believes now about where good candidates are, as JSON data (``kind`` is
        :attr:`BELIEFS`; e.g. a policy's probabilities per decision), for a dashboard; ``None`` for none."""
        return None

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue, as JSON data (includes ``name`` and the rng state)."""

    @classmethod
    @abc.abstractmethod
    def from_state(cls, space: SearchSpace, state: dict[str, Any]) -> Strategy:
        """Rebuild a strategy from :meth:`state_dict`."""
