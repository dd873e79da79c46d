"""The contract every search space fulfils. Genomes are plain JSON data."""
from __future__ import annotations

import abc
import dataclasses
import hashlib
import json
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

#: A genome is JSON data (dicts, lists, ints, strings), never an object.
Genome = Any


class GenomeError(ValueError):
    """A genome that does not belong to its space; the message names the field, the value and what is allowed."""

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"`{field}` = {value!r} is not allowed; expected {allowed}")


@dataclasses.dataclass(frozen=True)
class Decision:
    """One choice a genome makes, among a few values: what an explorer that learns a distribution over the
    space (a policy, a density) chooses from, one decision at a time.

    ``ordered``: the choices are consecutive integers, a range (a density over integers may use the order; a
    categorical policy ignores it).
    """

    name: str  #: the genome's column of that gene in :meth:`SearchSpace.flatten`
    choices: tuple[Any, ...]  #: JSON scalars
    ordered: bool = False


#: Given a decision, one of its ``choices``.
Choose = Callable[[Decision], Any]


def canonical_json(data: Any) -> str:
    """One text per value: sorted keys, no spaces, so equal genomes give equal keys."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


class SearchSpace(abc.ABC):
    """A family of architectures: how to draw, vary, check and name its genomes.

    Every method that draws takes a numpy ``Generator``: a space keeps no random state of its own.
    """

    #: The registry name (``pelee``, ``chain``, ``cell``).
    name: ClassVar[str]

    @abc.abstractmethod
    def sample(self, rng: np.random.Generator) -> Genome:
        """Draw a random genome."""

    @abc.abstractmethod
    def mutate(self, genome: Genome, rng: np.random.Generator) -> Genome:
        """Return a changed copy of ``genome`` (the input is never modified)."""

    @abc.abstractmethod
    def crossover(self, a: Genome, b: Genome, rng: np.random.Generator) -> tuple[Genome, Genome]:
        """Recombine two parents into two children (the inputs are never modified)."""

    @abc.abstractmethod
    def validate(self, genome: Genome) -> Genome:
        """Return ``genome`` if it belongs to the space, else raise :class:`GenomeError`."""

    @abc.abstractmethod
    def describe(self, genome: Genome) -> str:
        """One human-readable line, e.g. ``4 stages: 2x3@32 | 2x4@32 | ...``."""

    @abc.abstractmethod
    def flatten(self, genome: Genome) -> dict[str, int | float | str]:
        """Every gene as one named scalar column (for CSV exports and tables), in a stable order."""

    @abc.abstractmethod
    def params(self) -> dict[str, Any]:
        """The constructor arguments, JSON-ready: ``type(space)(**space.params())`` is an equal space."""

    @abc.abstractmethod
    def spec(self) -> dict[str, Any]:
        """A JSON description of the space itself (genes, choices, ranges) for the UI."""

    # --- the decision view: what learning explorers (``reinforce``, ``tpe``) need of a space -----------------

    def decisions(self) -> list[Decision]:
        """Every decision a genome of the space may take, in the order :meth:`compose` asks them; one asked only
        for some genomes (a chain's fifth layer) is listed once."""
        raise self._no_decision_view()

    def compose(self, choose: Choose) -> Genome | None:
        """The genome made by asking ``choose`` each decision in turn (define-by-run: which decisions come may
        depend on the choices before, as a chain's layers on its length); ``None`` when the choices make no
        genome of the space (a cell whose output is cut off from its input)."""
        raise self._no_decision_view()

    def decompose(self, genome: Genome) -> dict[str, Any]:
        """The choice of every decision ``genome`` takes, by name, in the order :meth:`compose` asks them:
        ``compose(lambda d: decompose(g)[d.name]) == g``. By default the genome's :meth:`flatten` columns less
        the blank ones (genes it does not have): decisions are named after those columns."""
        return {name: value for name, value in self.flatten(genome).items() if value != ""}

    def _no_decision_view(self) -> NotImplementedError:
        return NotImplementedError(f"The {self.name!r} space has no decision view (decisions, compose, decompose), "
                                   f"which the explorers that learn a distribution over a space need.")

    def key(self, genome: Genome) -> str:
        """A stable id: equal genomes share it, so a genome already evaluated is never sent again."""
        return hashlib.sha1(canonical_json(genome).encode()).hexdigest()[:16]

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.params() == other.params()  # type: ignore[union-attr]

    def __hash__(self) -> int:
        return hash((self.name, canonical_json(self.params())))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"
