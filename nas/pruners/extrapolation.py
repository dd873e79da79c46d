"""The predictor of the ``curve`` pruner: where a partial learning curve will end, with an uncertainty
(Domhan, Springenberg and Hutter, IJCAI 2015), stdlib + numpy.

The partial curve (x in epochs, scaled to ``u = x / max_steps`` so the target is ``u = 1``)
is fitted by five parametric families, each ``y = c + a * g(u; theta)``:

| family | g(u; theta) | theta |
| --- | --- | --- |
| ``pow`` (power law) | ``-u**-alpha`` | alpha |
| ``exp`` (exponential) | ``-exp(-b u)`` | b |
| ``logpower`` (log-power) | ``1 / (1 + (u / u0)**-a)`` | a, u0 |
| ``janoschek`` | ``-exp(-kappa u**delta)`` | kappa, delta |
| ``loglinear`` (still rising) | ``log(u)`` | none |

For a fixed theta the fit is linear in ``(c, a)``, so each family is fitted by least squares over a fixed grid
of thetas (variable projection on a grid: no iterative optimiser, nothing to diverge, no exception). The
uncertainty is a **residual bootstrap ensemble**: each family is refitted to ``BOOTSTRAP`` curves made of its
fit plus resampled residuals, and the families are mixed with BIC weights (``exp(-BIC/2)``). The prediction of
the final value is the mixture's mean; its spread combines the bootstrap spread, the spread between families,
the noise of one observation (finals are observed values too), and an extrapolation term that grows with the
share of the budget not yet seen (``EXTRAPOLATION``; on 4 points, where only the 3-parameter families fit, the
spread is also multiplied by ``FOUR_POINTS``: both set so that the stated 90% interval covers the true final
value about 90% of the time on the synthetic curves of ``nas.pruners.synthetic``; the test and the benchmark
measure it). The bootstrap draws from a generator seeded by ``(seed, id, number of points)``: a decision is a
pure function of the pruner's state, so a resumed search decides exactly as the uninterrupted one.

The population's prior on the shape (after Chandrashekaran and Lane 2017, who extrapolate with the curves of
previous runs; Klein et al. 2017 learn the shape across runs too): once ``POPULATION_MIN`` candidates completed,
the rising shape ``(family, theta)`` that fits each completed curve best (:func:`shape_of`) joins the mixture
as a sixth family, the population family, fitted like the others (an affine ``c + a g``, ``a > 0``) but over the
shapes seen in this search only, so a curve like the completed ones is predicted with the spread of three
parameters rather than four.
"""
from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from nas.pruners.base import unit

BOOTSTRAP = 48
#: The extrapolation term's size: spread += EXTRAPOLATION * (1 - seen share) * the curve's own range.
EXTRAPOLATION = 0.04
#: The spread's factor on 4 points (set as EXTRAPOLATION is: the 90% interval covered 63% of the true finals
#: of the synthetic curves seen for 4 of 20 epochs unscaled, 85% scaled so).
FOUR_POINTS = 2.5
#: At most this many points are fitted (the latest ones are kept, then every other older one is dropped).
MAX_POINTS = 60
Z90 = 1.6448536269514722

def _grid(name: str) -> list[tuple[float, ...]]:
    if name == "pow":
        return [(a,) for a in np.geomspace(0.05, 4.0, 24)]
    if name == "exp":
        return [(b,) for b in np.geomspace(0.3, 60.0, 24)]
    if name == "logpower":
        return list(itertools.product(np.geomspace(0.3, 5.0, 8), np.geomspace(1e-3, 3.0, 8)))
    if name == "janoschek":
        return list(itertools.product(np.geomspace(0.3, 60.0, 10), np.geomspace(0.3, 3.0, 6)))
    return [()]


FAMILIES = ("pow", "exp", "logpower", "janoschek", "loglinear")
_GRIDS = {name: _grid(name) for name in FAMILIES}


def _basis(name: str, u: np.ndarray, theta: tuple[float, ...]) -> np.ndarray:
    with np.errstate(all="ignore"):
        if name == "pow":
            return -u ** -theta[0]
        if name == "exp":
            return -np.exp(-theta[0] * u)
        if name == "logpower":
            return 1.0 / (1.0 + (u / theta[1]) ** -theta[0])
        if name == "janoschek":
            return -np.exp(-theta[0] * u ** theta[1])
        return np.log(u)


class _Family:
    """One family's design matrices over its theta grid at the points ``u``, and their pseudo-inverses.
    ``shapes``: instead of a family's grid, a list of ``(family, theta)`` shapes (the population family)."""

    def __init__(self, name: str, u: np.ndarray, shapes: list[tuple[str, tuple[float, ...]]] | None = None) -> None:
        self.name = name
        grid = [(name, theta) for theta in _GRIDS[name]] if shapes is None else shapes
        columns = np.stack([_basis(family, u, theta) for family, theta in grid])  # T x n
        target = np.array([_basis(family, np.array([1.0]), theta)[0] for family, theta in grid])
        keep = np.isfinite(columns).all(axis=1) & np.isfinite(target) & (np.ptp(columns, axis=1) > 1e-12)
        columns, target = columns[keep], target[keep]
        self.grid = [shape for shape, kept in zip(grid, keep) if kept]
        self.design = np.stack([np.ones_like(columns), columns], axis=2)  # T x n x 2
        self.pinv = np.linalg.pinv(self.design) if len(columns) else np.zeros((0, 2, len(u)))  # T x 2 x n
        self.target = np.stack([np.ones_like(target), target], axis=1)  # T x 2
        #: the shape chosen from a known set counts as one parameter, like a family's one theta
        self.params = 3 if shapes is not None else 2 + len(grid[0][1])
        self.rising = shapes is not None  #: the population's shapes are fitted rising only (a > 0)

    def fit(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For curves ``y`` (n x B): the best fit per curve (n x B), its SSE (B) and its prediction at u=1 (B)
        (SSE infinite where no shape fits, for the population family whose curves must rise)."""
        coef = np.einsum("tkn,nb->tkb", self.pinv, y)
        fitted = np.einsum("tnk,tkb->tnb", self.design, coef)
        sse = ((y[None] - fitted) ** 2).sum(axis=1)  # T x B
        sse = np.where(np.isfinite(sse), sse, np.inf)
        if self.rising:
            sse = np.where(coef[:, 1, :] > 0, sse, np.inf)
        best = np.argmin(sse, axis=0)
        cols = np.arange(y.shape[1])
        prediction = np.einsum("tk,tkb->tb", self.target, coef)[best, cols]
        return fitted[best, :, cols].T, sse[best, cols], prediction

    def best_shape(self, y: np.ndarray) -> tuple[int, float]:
        """The index in the kept grid of the best fit of one curve ``y`` (n) and its SSE."""
        coef = np.einsum("tkn,n->tk", self.pinv, y)
        sse = ((y[None] - np.einsum("tnk,tk->tn", self.design, coef)) ** 2).sum(axis=1)
        sse = np.where(np.isfinite(sse) & (coef[:, 1] > 0), sse, np.inf)
        best = int(np.argmin(sse))
        return best, float(sse[best])


def _points(steps: list[float], values: list[float], max_steps: float) -> tuple[np.ndarray, np.ndarray] | None:
    """The finite points of a curve as ``(u, y)`` (at most ``MAX_POINTS``), or ``None`` below 4 points."""
    x, y = np.asarray(steps, float), np.asarray(values, float)
    keep = np.isfinite(x) & np.isfinite(y) & (x > 0)
    x, y = x[keep], y[keep]
    if len(x) < 4 or not np.isfinite(max_steps) or max_steps <= 0:
        return None
    if len(x) > MAX_POINTS:  # the newest half kept whole, the older thinned evenly
        older = np.linspace(0, len(x) - MAX_POINTS // 2 - 1, MAX_POINTS // 2).round().astype(int)
        index = np.concatenate([older, np.arange(len(x) - MAX_POINTS // 2, len(x))])
        x, y = x[index], y[index]
    return np.minimum(x / max_steps, 1.0), y


def shape_of(steps: list[float], values: list[float], max_steps: float) -> tuple[str, tuple[float, ...]] | None:
    """The rising shape ``(family, theta)`` that fits a (completed) curve best by BIC, or ``None``: what the
    population family of :func:`predict` is made of."""
    points = _points(steps, values, max_steps)
    if points is None:
        return None
    u, y = points
    n, best, shape = len(u), math.inf, None
    floor = (1e-4 * max(float(np.ptp(y)), 1e-6)) ** 2 * n
    with np.errstate(all="ignore"):
        for name in FAMILIES:
            family = _Family(name, u)
            if not len(family.design) or family.params >= n:
                continue
            index, sse = family.best_shape(y)
            if not math.isfinite(sse):
                continue
            bic = n * math.log(max(sse, floor) / n) + family.params * math.log(n)
            if bic < best:
                best, shape = bic, (name, tuple(float(t) for t in family.grid[index][1]))
    return shape


def predict(steps: list[float], values: list[float], max_steps: float, seed: int = 0,
            salt: Any = "", upper: float | None = None,
            shapes: list[tuple[str, tuple[float, ...]]] | None = None) -> tuple[float, float] | None:
    """The predicted value at ``max_steps`` of a curve (larger is better) and its standard deviation, or
    ``None`` when it cannot be predicted (fewer than 4 finite points). Never raises. ``upper``: the best value
    the metric can take (1 for an accuracy): every family's prediction and bootstrap draw is capped there.
    ``shapes``: the shapes of other candidates' completed curves (:func:`shape_of`), fitted as one more family
    (the population's prior on the shape); none: the five families alone."""
    points = _points(steps, values, max_steps)
    if points is None:
        return None
    u, y = points
    n = len(u)
    spread_y = float(np.ptp(y))
    scale = max(spread_y, 1e-6 * max(1.0, float(np.abs(y).max())))
    floor = (1e-4 * scale) ** 2 * n
    rng = np.random.default_rng(int(unit(seed, "curve", str(salt), n) * 2**63))
    means, variances, bics, noises = [], [], [], []
    with np.errstate(all="ignore"):
        for name in FAMILIES + (("population",) if shapes else ()):
            family = _Family(name, u, shapes if name == "population" else None)
            if not len(family.design) or family.params >= n:  # as many parameters as points: no residuals
                continue
            fitted, sse, prediction = family.fit(y[:, None])
            if not (np.isfinite(prediction[0]) and np.isfinite(sse[0])):
                continue
            dof = max(n - family.params, 1)
            residuals = (y - fitted[:, 0]) * math.sqrt(n / dof)
            samples = fitted[:, 0][:, None] + residuals[rng.integers(0, n, size=(n, BOOTSTRAP))]
            _, boot_sse, boot = family.fit(samples)
            boot = boot[np.isfinite(boot) & np.isfinite(boot_sse)]
            if upper is not None:
                boot, prediction = np.minimum(boot, upper), np.minimum(prediction, upper)
            if not len(boot):
                continue
            sse0 = max(float(sse[0]), floor)
            means.append(float(prediction[0]))
            variances.append(float(np.var(boot)))
            bics.append(n * math.log(sse0 / n) + family.params * math.log(n))
            noises.append(sse0 / dof)
    if not means:
        return None
    bic = np.array(bics)
    weights = np.exp(-0.5 * (bic - bic.min()))
    weights /= weights.sum()
    mean = float(np.dot(weights, means))
    mean = min(mean, upper) if upper is not None else mean  # a weighted mean of capped values, up to rounding
    variance = float(np.dot(weights, np.array(variances) + (np.array(means) - mean) ** 2 + np.array(noises)))
    unseen = max(0.0, 1.0 - float(u[-1]))
    spread = math.sqrt(max(variance, 0.0)) + EXTRAPOLATION * unseen * scale
    if n < 5:  # only the 3-parameter families fit, on one residual degree of freedom: the bootstrap says too little
        spread *= FOUR_POINTS
    if not (math.isfinite(mean) and math.isfinite(spread)):
        return None
    return mean, max(spread, 1e-9 * scale)


def prob_above(mean: float, spread: float, threshold: float) -> float:
    return 0.5 * math.erfc((threshold - mean) / (spread * math.sqrt(2)))
