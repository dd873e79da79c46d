"""The contract every search space fulfils. Genomes are plain JSON data."""
from __future__ import annotations

import abc
import hashlib
import json
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
