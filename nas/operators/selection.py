"""Selection operators: which individuals become parents, and which survive.

Scores follow one convention everywhere: larger is better, and a failed result scores ``-inf``. Every function
that draws takes ``rng: numpy.random.Generator`` and returns plain Python ints and floats.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def roulette_wheel(scores: Sequence[float], k: int, rng: np.random.Generator) -> list[int]:
    """``k`` indices drawn with replacement, each with probability proportional to its score (seed 000).

    The weights: when every finite score is ``>= 0`` (fitness = accuracy, as in seed 000) the scores themselves;
    otherwise the scores shifted by their minimum (``score - min``, "windowing"), so the worst finite score gets
    weight 0. Non-finite scores (``-inf`` of a failed result, ``nan``) get weight 0 while any finite score exists.
    When all weights are 0 (all scores equal to the minimum, or all zero) the draw is uniform over the finite
    scores; when no score is finite, uniform over all.
    """
    values = np.asarray(scores, dtype=float)
    if values.ndim != 1 or len(values) == 0:
        raise ValueError(f"`scores` must be a non-empty sequence of numbers (scores={list(scores)!r}).")
    if k < 0:
        raise ValueError(f"`k` must be >= 0 (k={k}).")
    finite = np.isfinite(values)
    if not finite.any():
        weights = np.ones(len(values))
    else:
        low = values[finite].min()
        weights = np.where(finite, values - min(low, 0.0), 0.0)
        if weights.sum() <= 0.0:
            weights = finite.astype(float)
    return [int(i) for i in rng.choice(len(values), size=k, p=weights / weights.sum())]


def tournament(scores: Sequence[Any], size: int, rng: np.random.Generator) -> int:
    """The index of the best of ``size`` entrants drawn without replacement (all of them if ``size >= len``).

    ``scores`` may be numbers or tuples (NSGA-II compares ``(-rank, crowding)``): anything ordered, larger is
    better. Among tied entrants the one drawn first wins.
    """
    if len(scores) == 0:
        raise ValueError("`scores` must not be empty (scores=[]).")
    if size < 1:
        raise ValueError(f"`size` must be >= 1 (size={size}).")
    entrants = rng.choice(len(scores), size=min(size, len(scores)), replace=False)
    return int(max(entrants, key=lambda i: scores[i]))


def oldest(births: Sequence[float]) -> int:
    """The index of the earliest birth (aging evolution drops it); the first one among ties."""
    if len(births) == 0:
        raise ValueError("`births` must not be empty (births=[]).")
    return min(range(len(births)), key=lambda i: births[i])


def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    """True if ``a`` is at least as good as ``b`` in every objective and better in one (larger is better)."""
    return all(x >= y for x, y in zip(a, b)) and any(x > y for x, y in zip(a, b))


def non_dominated_sort(rows: Sequence[Sequence[float]]) -> list[list[int]]:
    """Deb's fast non-dominated sort: the fronts as lists of row indices, front 0 first (larger is better).

    Orient objectives before calling (negate those to minimise); a failed row of ``-inf`` values is dominated
    by every finite row. Every index appears in exactly one front, in increasing order within it.
    """
    widths = {len(row) for row in rows}
    if len(widths) > 1:
        raise ValueError(f"Every row must have the same number of objectives (lengths={sorted(widths)}).")
    dominated_by: list[list[int]] = [[] for _ in rows]  # dominated_by[i]: the rows that i dominates
    counts = [0] * len(rows)  # how many rows dominate i
    for i, a in enumerate(rows):
        for j in range(i + 1, len(rows)):
            if dominates(a, rows[j]):
                dominated_by[i].append(j)
                counts[j] += 1
            elif dominates(rows[j], a):
                dominated_by[j].append(i)
                counts[i] += 1
    fronts = []
    front = [i for i, count in enumerate(counts) if count == 0]
    while front:
        fronts.append(front)
        following = []
        for i in front:
            for j in dominated_by[i]:
                counts[j] -= 1
                if counts[j] == 0:
                    following.append(j)
        front = sorted(following)
    return fronts


def pareto_front(rows: Sequence[Sequence[float]]) -> list[int]:
    """The indices of the rows no other row dominates (front 0 of :func:`non_dominated_sort`), in increasing
    order; one pass that compares each row with the current front only, for large archives."""
    front: list[int] = []
    for i, row in enumerate(rows):
        if not any(dominates(rows[j], row) for j in front):
            front = [j for j in front if not dominates(row, rows[j])] + [i]
    return front


def crowding_distance(rows: Sequence[Sequence[float]]) -> list[float]:
    """NSGA-II's crowding distance of each row of one front: ``inf`` at both ends of every objective, else the
    sum over objectives of the gap between its neighbours divided by the objective's span.

    An objective whose span is zero or not finite adds nothing to the inner rows (its ends stay ``inf``).
    """
    distances = [0.0] * len(rows)
    if not rows:
        return distances
    for m in range(len(rows[0])):
        order = sorted(range(len(rows)), key=lambda i: rows[i][m])
        distances[order[0]] = distances[order[-1]] = math.inf
        span = rows[order[-1]][m] - rows[order[0]][m]
        if not (math.isfinite(span) and span > 0):
            continue
        for before, i, after in zip(order, order[1:-1], order[2:]):
            distances[i] += (rows[after][m] - rows[before][m]) / span
    return distances
