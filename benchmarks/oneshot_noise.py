"""How much of the ranking check's tau a supernet can reach at all, and which supernet score ranks best
(issue 33's tau on five seeds; used by ``benchmarks/oneshot.py``).

The check's reference is one stand-alone training per path (``--check-epochs``, training seed = the search's
seed, which also fixes the validation split). That reference is noisy itself: a second training of the same
paths (another training seed, so other initial weights, batch order and validation split) does not rank them
the same. Three things are measured on the check's paths:

- **the reference's own noise**: Kendall's tau-b between the two stand-alone trainings (``A`` and ``B``), and
  the ceiling it implies for any score against ``A`` alone: if each training's accuracy is the path's true
  quality plus independent noise, and the pairs are near bivariate normal (Greiner's relation, tau = 2/pi
  arcsin r), a score equal to the true quality reaches tau = 2/pi arcsin(sqrt(sin(pi tau_AB / 2))) against ``A``;
- **the supernet's score** by accuracy (as the kind scores paths) and by validation loss (continuous: the 360
  validation images of digits make accuracies tie at 0.28-point steps, and a well trained supernet scores most
  paths near 99%), each with ``--tau-calibrations`` batch-norm calibration sizes;
- **against the mean of A and B** (two trainings and two validation splits: a less noisy reference).
"""
from __future__ import annotations

from typing import Any

from evaluators.evaluate import evaluate
from evaluators.path_scoring import score_paths
from nas.oneshot.ranking import noise_ceiling, ranking_summary

#: The second stand-alone training's seed is the check's plus this (another split, init and batch order).
SECOND_REFERENCE = 500


def ceiling(tau_ab: float) -> float:
    """The tau a perfect score reaches against one reference whose two trainings agree at ``tau_ab`` (see the
    module's docstring; 0 when they do not agree at all): ``nas.oneshot.noise_ceiling`` for one training."""
    return noise_ceiling(tau_ab, 1)


def summary_text(summary: dict[str, Any]) -> str:
    if summary["tau"] is None:
        return f"undefined (n={summary['n']})"
    if summary.get("low") is None:
        return f"{summary['tau']:.2f} (n={summary['n']})"
    return f"{summary['tau']:.2f} [{summary['low']:.2f}, {summary['high']:.2f}] (n={summary['n']})"


def reference_noise(check: dict[str, Any], space: Any, dataset: str, supernet: Any, training: dict[str, Any],
                    calibrations: list[int], seed: int) -> dict[str, Any]:
    """The check's paths trained a second time (seed ``training["seed"] + SECOND_REFERENCE``) and scored on the
    supernet with each calibration size, by accuracy and by loss: every tau of the module's docstring, as
    ``ranking_summary`` dicts, under ``taus[(score, calibration, reference)]`` with ``score`` ``accuracy`` or
    ``loss``, ``reference`` ``A`` (the check's) or ``mean``; and ``A-B`` with its ``ceiling``."""
    usable = [r for r in check["paths"] if r["standalone"] is not None]
    second = {**training, "seed": training["seed"] + SECOND_REFERENCE}
    rows = []
    for row in usable:
        result = evaluate(row["path"], space, second, dataset, "cpu")
        if result.status == "ok":
            rows.append((row, result.fitness))
    first = [r["standalone"] for r, _ in rows]
    other = [b for _, b in rows]
    mean = [(a + b) / 2 for a, b in zip(first, other)]
    agreement = ranking_summary(first, other)
    taus: dict[str, Any] = {}
    for images in calibrations:
        scored = score_paths([r["path"] for r, _ in rows], space, dataset, weights=supernet.weights,
                             digest=supernet.digest, seed=seed, calibration_images=images)["results"]
        scores = {"accuracy": [s["accuracy"] for s in scored], "loss": [-s["val_loss"] for s in scored]}
        for score, values in scores.items():
            for name, reference in (("A", first), ("mean", mean)):
                taus[f"{score}/{images}/{name}"] = ranking_summary(values, reference)
            taus[f"{score}/{images}/A-first20"] = ranking_summary(values[:20], first[:20])
    return {"A-B": agreement, "ceiling": ceiling(agreement["tau"]) if agreement["tau"] is not None else None,
            "taus": taus, "n": len(rows)}
