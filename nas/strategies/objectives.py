"""Objectives as ``[name, "max" | "min"]`` pairs: checked once, read from a result, and turned into the order
of "best" (a Pareto front when there are several). ``nsga2`` and ``tpe`` take any number of them; ``reinforce``
takes one (its reward)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from nas.operators.selection import pareto_front
from nas.strategies.archive import Param
from nas.strategies.base import Candidate, Result

OBJECTIVES = Param(
    "objectives", "objectives",
    'The objectives as [name, "max" | "min"] pairs; a name is read from Result.objectives '
    '("fitness" falls back to Result.fitness).',
    label="Objectives",
)
DIRECTIONS = ("max", "min")
#: More objectives than this make nearly every candidate non-dominated: the front stops selecting.
MAX_OBJECTIVES = 8
#: The single objective of a strategy that is given none: the fitness, maximised.
FITNESS = (("fitness", "max"),)


def check_objectives(value: Any, most: int = MAX_OBJECTIVES) -> list[list[str]]:
    """``value`` as a list of ``[name, direction]`` lists, or ``ValueError`` showing it."""
    pairs = value if isinstance(value, (list, tuple)) else []
    ok = 0 < len(pairs) <= most and all(
        isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[0], str) and 0 < len(pair[0]) <= 64
        and pair[1] in DIRECTIONS for pair in pairs
    )
    if not ok or len({pair[0] for pair in pairs}) != len(pairs):
        several = f"1 to {most}" if most > 1 else "one"
        raise ValueError(
            f'`objectives` must be a list of {several} [name, "max" | "min"] pair{"s" * (most > 1)} with distinct '
            f"names (objectives={str(value)[:200]})."
        )
    return [[name, direction] for name, direction in pairs]


def values(result: Result, objectives: Sequence[Sequence[str]]) -> list[float] | None:
    """The objectives' values of a successful result, as measured; ``None`` for a failure or a missing one."""
    found = [result.fitness if name == "fitness" else result.objectives.get(name) for name, _ in objectives]
    return None if not result.ok or any(value is None for value in found) else [float(v) for v in found]


def oriented(result: Result, objectives: Sequence[Sequence[str]]) -> tuple[float, ...]:
    """The objectives oriented so that larger is better (``min`` ones negated); ``-inf`` for a failure or a
    result without every objective."""
    found = values(result, objectives)
    if found is None:
        return (-math.inf,) * len(objectives)
    return tuple(v if direction == "max" else -v for v, (_, direction) in zip(found, objectives))


def first_front(ranked: list[tuple[Candidate, Result]], objectives: Sequence[Sequence[str]],
                k: int | None) -> list[tuple[Candidate, Result]]:
    """Of ``ranked`` (sorted by :func:`oriented`, best first), the first Pareto front of those with every
    objective, in that order, cut to its first ``k``."""
    ranked = [(c, r) for c, r in ranked if math.isfinite(oriented(r, objectives)[0])]
    return [ranked[i] for i in pareto_front([oriented(r, objectives) for _, r in ranked])][:k]
