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


#: What the ranking check ranks paths by, on the supernet's side (its ``score``) and on the stand-alone side (its
#: ``reference``): validation accuracy, or validation loss (lower is better; continuous, where accuracies on a
#: small validation set tie in steps of one image).
RANK_BY = ("accuracy", "loss")


def rank_value(accuracy: float | None, loss: float | None, by: str) -> float | None:
    """The value a path is ranked by (higher is better): its ``accuracy``, or its negated ``loss``; ``None``
    when that is missing or not finite."""
    if by not in RANK_BY:
        raise ValueError(f"a ranking is by one of {', '.join(RANK_BY)} (got {by!r})")
    value = accuracy if by == "accuracy" else (None if loss is None else -loss)
    return float(value) if value is not None and math.isfinite(value) else None


def reference_value(trainings: Sequence[dict[str, Any]], by: str) -> float | None:
    """A path's reference: the mean of :func:`rank_value` over its stand-alone ``trainings`` (dicts with
    ``accuracy`` and ``loss``) that gave one; ``None`` when none did."""
    values = [v for v in (rank_value(t.get("accuracy"), t.get("loss"), by) for t in trainings) if v is not None]
    return sum(values) / len(values) if values else None


def describe_check(score: str, reference: str, repeats: int) -> str:
    """The check's comparison in words, for the page, the CSV and the benchmark tables."""
    trainings = "one stand-alone training" if repeats == 1 else f"the mean of {repeats} stand-alone trainings"
    return f"supernet validation {score} vs validation {reference} of {trainings}"


def noise_ceiling(tau_ab: float, repeats: int = 1) -> float:
    """The tau a perfect score could reach against the mean of ``repeats`` stand-alone trainings when two
    trainings of the same paths agree at ``tau_ab``, if each training is the path's true quality plus independent
    noise and the pairs are near bivariate normal: one training's reliability ``r = sin(pi tau_ab / 2)``
    (Greiner's relation), the mean's ``R r / (1 + (R - 1) r)`` (Spearman-Brown), the ceiling
    ``2/pi asin(sqrt(reliability))``; 0 when the trainings do not agree at all."""
    r = max(math.sin(math.pi * tau_ab / 2), 0.0)
    reliability = repeats * r / (1 + (repeats - 1) * r) if r else 0.0
    return 2 / math.pi * math.asin(math.sqrt(min(reliability, 1.0)))


def reference_noise(points: Sequence[dict[str, Any]], reference: str, repeats: int,
                    confidence: float = 0.95) -> dict[str, Any] | None:
    """How well the reference agrees with itself: :func:`ranking_summary` between the first two trainings of
    the points that have both, and the :func:`noise_ceiling` it sets for the mean of ``repeats``; ``None`` below
    two trainings or two such points."""
    pairs = []
    for point in points:
        values = [rank_value(t.get("accuracy"), t.get("loss"), reference) for t in (point.get("trainings") or [])[:2]]
        if len(values) == 2 and None not in values:
            pairs.append(values)
    if repeats < 2 or len(pairs) < 2:
        return None
    agreement = ranking_summary([a for a, _ in pairs], [b for _, b in pairs], confidence)
    tau_ab = agreement["tau"] if agreement["tau"] is not None else 0.0
    return {**{k: agreement[k] for k in ("tau", "low", "high", "n")}, "ceiling": noise_ceiling(tau_ab, repeats)}


def check_point(point: dict[str, Any], score: str, reference: str) -> dict[str, Any]:
    """``point`` (as :func:`check_summary` takes it) with ``supernet`` and ``standalone``: the values the check
    ranks it by on each side, as measured (an accuracy, or a loss: lower is better), for scatter plots and CSVs."""
    def shown(value: float | None, by: str) -> float | None:
        return value if value is None or by == "accuracy" else -value

    return {**point, "supernet": shown(rank_value(point.get("supernet_accuracy"), point.get("supernet_loss"), score),
                                       score),
            "standalone": shown(reference_value(point.get("trainings") or [], reference), reference)}


def check_summary(points: Sequence[dict[str, Any]], *, score: str = "accuracy", reference: str = "accuracy",
                  confidence: float = 0.95) -> dict[str, Any]:
    """The ranking check's result from its ``points`` (each with ``supernet_accuracy``, ``supernet_loss`` and
    ``trainings``: one dict per stand-alone training with ``accuracy`` and ``loss``, a failed one without):
    :func:`ranking_summary` of the supernet's ``score`` against the mean ``reference`` of the trainings, plus
    ``score``, ``reference``, ``repeats`` (the most trainings of a path), ``against`` (in words) and
    ``reference_noise`` (:func:`reference_noise`: the yardstick for tau; ``None`` with one training). Points
    lacking either side are left out of tau."""
    pairs = []
    for point in points:
        x = rank_value(point.get("supernet_accuracy"), point.get("supernet_loss"), score)
        y = reference_value(point.get("trainings") or [], reference)
        if x is not None and y is not None:
            pairs.append((x, y))
    repeats = max((len(p.get("trainings") or []) for p in points), default=1) or 1
    if len(pairs) >= 2:
        summary = ranking_summary([x for x, _ in pairs], [y for _, y in pairs], confidence)
    else:
        summary = {"tau": None, "low": None, "high": None, "confidence": confidence, "n": len(pairs),
                   "method": METHOD}
    return {**summary, "score": score, "reference": reference, "repeats": repeats,
            "against": describe_check(score, reference, repeats),
            "reference_noise": reference_noise(points, reference, repeats, confidence)}


#: Repeat ``r`` of a path's stand-alone training uses the training's seed plus ``r`` times this (other initial
#: weights, batch order and validation split); repeat 0 is the training's own seed.
REPEAT_SEED_STEP = 500


def repeat_seed(seed: int, repeat: int) -> int:
    """The training seed of a check path's stand-alone training number ``repeat`` (0 is the training's own)."""
    return seed + repeat * REPEAT_SEED_STEP
