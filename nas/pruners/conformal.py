"""Where a partial learning curve will end, with an interval calibrated on the search's own completed curves:
split conformal prediction over look-alike prefixes (stdlib + numpy).

What it does. A partial curve cut at step ``t`` (its latest report) is summarised by its **level** ``m`` (its
latest value; the mean of its last :data:`LEVEL_POINTS`) and its **prefix**: the shape of its rise, its values at
:data:`GRID` evenly spaced steps in ``(0, t]`` (linear interpolation) less its first value, divided by its rise
from the first value to ``m`` (at least :data:`MIN_RISE`). Every candidate that completed its budget with a final
value is a **reference**: cut at the same ``t``, it has a level ``m_j`` and a prefix too, and its final ``F_j`` is
known, so its **normalised residual** (its conformity score) is ``r_j = (F_j - m_j) / s_j``, with ``s_j`` the
headroom ``cap - m_j`` to the best value the metric can take (``upper``; 1 for an accuracy), at least
:data:`MIN_HEADROOM`: the share of the remaining headroom it gained (or, negative, lost) after ``t``. Without a
cap, ``s = 1`` (plain residuals). The **look-alikes** are the ``neighbours`` references whose prefixes are
nearest to this one, among those within :data:`RADIUS` of it (root mean square distance after dividing each grid
point by the references' spread there, ties by id). From their sorted scores ``r_(1) <= ... <= r_(n)``, the
interval at miscoverage ``alpha`` on each side is::

    low  = m + s * r_(floor(alpha (n + 1)))       (-inf when that rank is 0)
    high = m + s * r_(ceil((1 - alpha) (n + 1)))  (+inf when that rank exceeds n)

and the point prediction is ``m + s * median(r)``.

Why. The parametric families this pruner extrapolated with before (Domhan et al. 2015, removed) carry
their shape into the future: a flat prefix is predicted flat, a curve at its peak predicted to stay there, so
their stated 90% held the finals of late risers, step-schedule jumps and divergers 7% to 51% of the time (issue
29). A conformal interval makes no assumption on the shape: it is the spread of what actually happened to
curves like this one in this search, so a flat prefix borrows the spread of the flat prefixes that later rose,
and a curve at its peak the falls of the divergers that peaked alike. Normalising by the headroom makes curves
at different levels comparable (an accuracy at 0.95 cannot gain 0.3); conditioning on look-alikes (a localised
conformal predictor, as Guan 2023, "Localized conformal prediction") keeps an interval narrow where the
look-alikes agree, wide where they do not. The look-alikes are chosen by the shape of their rise, not its
height: curves that rose alike at different heights gain alike shares of their headroom, and a curve of another
shape that happens to be at the same height does not speak for this one's future.

What it guarantees. If this curve and its look-alikes are exchangeable (drawn alike, as candidates of one
search are, and chosen as look-alikes alike), ``P(final > high) <= alpha`` and ``P(final < low) <= alpha``:
split conformal prediction's finite-sample, distribution-free, **marginal** guarantee (Vovk et al. 2005; Lei et
al. 2018). It is not conditional: it holds on average over the candidates, not for each one; choosing the
look-alikes by distance makes exchangeability an approximation (the guarantee is exact for a fixed reference
set), and the references are the completed curves, so candidates stopped early are missing from them (an
audit's candidates are not). With fewer than ``(1 - alpha) / alpha`` references (19 at alpha = 0.05), ``high``
is ``+inf``: nothing is stopped before that many curves completed, and a curve with fewer than that many
look-alikes within the radius is not stopped either (nothing is known of its future).

The selected eventual best. A marginal bound says nothing of the candidate that turns out best: it is, by
definition, above its look-alikes, and where its prefix says little (a late riser still flat) its final is above
their highest score, the 95% bound at 19 look-alikes, more often than 5% of the time. ``benchmarks/early_stop.py``
counts how often that stopped the true best.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

#: The prefix is compared at these shares of ``t``.
SHARES = np.arange(1, 7) / 6
GRID = len(SHARES)
#: The level of a curve is the mean of its latest values (1: its latest value; a mean of several lags behind a
#: rising curve by a different amount for each slope, which blurred the look-alikes' scores on the benchmark).
LEVEL_POINTS = 1
#: Only references this close are look-alikes: a root mean square distance over the grid, in units of the
#: references' spread at each point (two curves drawn at random are about 1.4 apart). Without it, the 20 nearest
#: of the first 20-40 references were the whole population, whose few late risers could not speak for a flat
#: prefix: on the benchmark's tuning seeds the true best was stopped in 8-50% of the runs per mix, with it in
#: 0-25%, for 1.25-1.37x fewer epochs instead of 1.25-1.59x.
RADIUS = 1.0
#: The smallest headroom a score is divided by: below it, plain residuals (times 4). A curve near the cap whose
#: noise or fall moves it by 0.05 would otherwise score -0.05 / 0.01 = -5 headrooms, and lend that to a curve with
#: headroom 0.5 (on the benchmark, 1e-3 gave lower bounds below -4 and stopped fewer: 1.1-1.4x against 1.2-1.6x).
MIN_HEADROOM = 0.25
#: A prefix is compared by the shape of its rise: its values less its first one, divided by its rise from the
#: first value to its level, at least this (a flat prefix, a late riser's or a plateau's, keeps its small rise as
#: such and is compared with flat prefixes). Comparing the raw values instead made a curve's look-alikes those of
#: its height: at a given epoch a power law at 0.5 and one at 0.8 that rose alike were apart, so fewer references
#: lay within :data:`RADIUS` and the curves of other shapes at the same height were taken for look-alikes. On the
#: benchmark's tuning seeds 0-4 (five mixes, 100 candidates of 20 epochs on 8 slots): 1.24-1.43x fewer epochs than
#: ``none`` against 1.17-1.32x, the true best stopped in 0 of 25 runs against 2, the epochs on candidates never
#: given a bounded interval 620-790 against 860-920 per run.
MIN_RISE = 0.1


@dataclasses.dataclass(frozen=True)
class Cut:
    """A curve cut at step ``t``: its prefix on the grid, its level and its scale (the headroom)."""

    prefix: np.ndarray
    level: float
    scale: float


@dataclasses.dataclass(frozen=True)
class Interval:
    """A prediction of the final value: ``low`` and ``high`` at ``level`` (``-inf``/``inf`` when unbounded),
    ``predicted`` the look-alikes' median, ``references`` how many look-alikes it was made from."""

    predicted: float
    low: float
    high: float
    level: float
    references: int

    @property
    def bounded(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)


def pad(curves: list[list[list[float]]]) -> tuple[np.ndarray, np.ndarray]:
    """Curves ``[[step, value], ...]`` (steps rising) as two rows-by-points arrays, steps padded with ``inf``."""
    width = max((len(c) for c in curves), default=1)
    steps, values = np.full((len(curves), width), np.inf), np.zeros((len(curves), width))
    for row, curve in enumerate(curves):
        if curve:
            steps[row, :len(curve)] = [p[0] for p in curve]
            values[row, :len(curve)] = [p[1] for p in curve]
    return steps, values


def cut_many(steps: np.ndarray, values: np.ndarray, t: float, cap: float | None) -> tuple[np.ndarray, ...]:
    """Every row of :func:`pad`'s arrays cut at ``t``: the prefixes (rows by :data:`GRID`: linear interpolation of
    the points at or before ``t``, the first value before the first point, less the first value and divided by the
    rise to the level, at least :data:`MIN_RISE`: the shape of the rise, whatever its height), the levels, the
    scales (headroom to ``cap``, or 1) and which rows have a point at or before ``t``. Vectorised: one call for all
    the references."""
    seen = (steps <= t + 1e-9).sum(axis=1)  # points at or before t, per row
    rows = np.arange(len(steps))[:, None]
    grid = t * SHARES
    after = (steps[:, None, :] <= grid[None, :, None] + 1e-12).sum(axis=2)  # points at or before each grid step
    last = np.maximum(seen - 1, 0)[:, None]
    left, right = np.minimum(np.maximum(after - 1, 0), last), np.minimum(after, last)
    x0, x1, y0, y1 = steps[rows, left], steps[rows, right], values[rows, left], values[rows, right]
    with np.errstate(all="ignore"):
        share = np.where(right > left, (grid[None, :] - x0) / (x1 - x0), 0.0)
    prefixes = y0 + np.clip(share, 0.0, 1.0) * (y1 - y0)
    latest = seen[:, None] - 1 - np.arange(LEVEL_POINTS)[None, :]
    used = latest >= 0
    levels = (np.where(used, values[rows, np.maximum(latest, 0)], 0.0).sum(axis=1)
              / np.maximum(used.sum(axis=1), 1))
    scales = np.maximum(cap - levels, MIN_HEADROOM) if cap is not None else np.ones(len(steps))
    first = values[:, :1]
    rise = np.maximum(np.abs(levels[:, None] - first), MIN_RISE)
    return (prefixes - first) / rise, levels, scales, seen > 0


def cut(steps: list[float], values: list[float], t: float, cap: float | None) -> Cut | None:
    """One curve ``(steps, values)`` (steps rising) cut at ``t`` as :func:`cut_many` cuts the references;
    ``None`` when it has no point at or before ``t``."""
    if not steps:
        return None
    prefixes, levels, scales, seen = cut_many(np.array([steps], float), np.array([values], float), t, cap)
    return Cut(prefixes[0], float(levels[0]), float(scales[0])) if seen[0] else None


def score(reference: Cut, final: float) -> float:
    """A completed curve's normalised residual: the share of its headroom at the cut it gained by the end."""
    return (final - reference.level) / reference.scale


def look_alikes(prefix: np.ndarray, prefixes: np.ndarray, count: int, radius: float = math.inf) -> np.ndarray:
    """The indices of the ``count`` rows of ``prefixes`` nearest to ``prefix`` within ``radius``, nearest first.
    The distance is the root mean square over the grid of the differences divided by the rows' spread at each
    grid point; a tie goes to the lower index (the references are in the order of ids)."""
    if not len(prefixes):
        return np.zeros(0, int)
    spread = prefixes.std(axis=0) + 1e-9
    distance = np.sqrt((((prefixes - prefix) / spread) ** 2).mean(axis=1))
    order = np.lexsort((np.arange(len(distance)), distance))[:count]
    return order[distance[order] <= radius]


def interval(mine: Cut, scores: np.ndarray, alpha: float, cap: float | None = None) -> Interval:
    """The split conformal interval of a curve cut as ``mine`` from its look-alikes' ``scores`` (module doc),
    ``alpha`` on each side: at level ``1 - 2 alpha``; bounds above ``cap`` are brought down to it."""
    n = len(scores)
    ranked = np.sort(np.asarray(scores, float))
    level = 1.0 - 2.0 * alpha
    if n == 0:
        return Interval(mine.level, -math.inf, math.inf, level, 0)
    low_rank, high_rank = math.floor(alpha * (n + 1) + 1e-9), math.ceil((1.0 - alpha) * (n + 1) - 1e-9)
    low = mine.level + mine.scale * float(ranked[low_rank - 1]) if low_rank >= 1 else -math.inf
    high = mine.level + mine.scale * float(ranked[high_rank - 1]) if high_rank <= n else math.inf
    predicted = mine.level + mine.scale * 0.5 * float(ranked[(n - 1) // 2] + ranked[n // 2])  # np.median: 20x slower
    if cap is not None:  # an unbounded side stays unbounded: it says that too few curves completed
        low, high, predicted = min(low, cap), (min(high, cap) if math.isfinite(high) else high), min(predicted, cap)
    return Interval(predicted, low, high, level, n)


def references_needed(alpha: float) -> int:
    """The fewest look-alikes that bound the interval at ``alpha`` on each side: ``ceil((1 - alpha) / alpha)``."""
    return math.ceil((1.0 - alpha) / alpha - 1e-9) if alpha > 0 else math.inf  # type: ignore[return-value]


def localised(mine: Cut, prefixes: np.ndarray, scores: np.ndarray, count: int, alpha: float,
              cap: float | None = None) -> Interval:
    """The interval of a curve cut as ``mine`` from the references cut alike (``prefixes``, ``scores``): conformal
    over its ``count`` nearest look-alikes within :data:`RADIUS` (unbounded when too few are that close).

    Tried and left out: when 5 to 18 look-alikes are close, bounding it by the nearest references at any distance
    (never below the close ones' highest score). On tuning seeds 0-19 it saved 1.25-1.29x against 1.20-1.21x
    (even, schedules, unstable) but stopped the true best in 5/15/20% of the runs against 0/20/10%, and on seeds
    100-119 in 25/10/10/0/5% of the runs against 15/5/5/0/0% (every mix): the far references cannot speak for the
    few whose prefix says little of their future, and those are where the best hides."""
    close = look_alikes(mine.prefix, prefixes, count, RADIUS)
    return interval(mine, scores[close], alpha, cap)
