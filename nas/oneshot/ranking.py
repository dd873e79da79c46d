"""How far a supernet's ranking can be trusted: Kendall's rank correlation between the supernet's score and the
stand-alone accuracy of the same paths, with a confidence interval.

The interval is the Fisher-type normal approximation of Fieller, Hartley and Pearson (1957): ``atanh(tau)`` is
close to normal with variance ``0.437 / (n - 4)``; the interval is ``tanh(atanh(tau) +- z * sqrt(0.437 / (n -
4)))``. It needs ``n >= 5`` pairs and is approximate for small ``n`` (it assumes no ties and a bivariate-normal
shape); it is deterministic (no resampling), so the same pairs always give the same interval.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

#: Fieller, Hartley & Pearson's variance constant for atanh(Kendall's tau).
FIELLER_VARIANCE = 0.437
METHOD = "Fisher-type normal approximation, var(atanh(tau)) = 0.437 / (n - 4) (Fieller, Hartley & Pearson 1957)"


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b of the pairs ``(x[i], y[i])`` (ties in either variable corrected for, as scipy's
    default); ``nan`` when one variable is constant. O(n^2): meant for tens to thousands of pairs."""
    if len(x) != len(y):
        raise ValueError(f"x and y must have the same length (got {len(x)} and {len(y)}).")
    if len(x) < 2:
        raise ValueError(f"Kendall's tau needs at least 2 pairs (got {len(x)}).")
    concordant = discordant = ties_x = ties_y = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue  # tied in both: counts in neither denominator term
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    return (concordant - discordant) / denominator if denominator else math.nan


def tau_interval(tau: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The ``confidence`` interval of Kendall's tau from ``n`` pairs (see the module's docstring)."""
    if n < 5:
        raise ValueError(f"the interval of Kendall's tau needs at least 5 pairs (got {n}).")
    if not 0 < confidence < 1:
        raise ValueError(f"`confidence` must be between 0 and 1 (got {confidence!r}).")
    if math.isnan(tau):
        return math.nan, math.nan
    z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
    centre = math.atanh(max(min(tau, 1 - 1e-12), -1 + 1e-12))
    half = z * math.sqrt(FIELLER_VARIANCE / (n - 4))
    return math.tanh(centre - half), math.tanh(centre + half)


def ranking_summary(scores: Sequence[float], accuracies: Sequence[float], confidence: float = 0.95) -> dict[str, Any]:
    """``{"tau", "low", "high", "confidence", "n", "method"}`` for supernet ``scores`` against stand-alone
    ``accuracies`` of the same paths (JSON-ready; the interval is ``None`` below 5 pairs or for a nan tau)."""
    tau = kendall_tau(scores, accuracies)
    low = high = None
    if len(scores) >= 5 and not math.isnan(tau):
        low, high = tau_interval(tau, len(scores), confidence)
    return {"tau": None if math.isnan(tau) else tau, "low": low, "high": high, "confidence": confidence,
            "n": len(scores), "method": METHOD}
