"""The ranking check: how far a supernet's ranking of paths can be trusted. ``count`` random paths are trained
stand-alone (the ordinary evaluation, :func:`evaluators.evaluate.evaluate`, under a short budget) ``repeats``
times each (training seeds :func:`nas.oneshot.repeat_seed`) and scored with the supernet's weights
(:func:`evaluators.path_scoring.score_paths`); Kendall's tau-b between the supernet's ``score`` and the mean
``reference`` of the trainings (each by validation accuracy or loss), with its confidence interval, is
``nas.oneshot.check_summary``'s.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from evaluators.budget import TrainingBudget
from evaluators.builders import as_space
from evaluators.evaluate import evaluate
from evaluators.path_scoring import score_paths
from nas.oneshot.paths import random_paths
from nas.oneshot.ranking import check_point, check_summary, repeat_seed


def standalone(path: dict[str, Any], space: Any, dataset: str, training: dict[str, Any] | None,
               repeat: int, device: str = "cpu") -> dict[str, Any]:
    """One stand-alone training of ``path`` (repeat ``repeat``): ``{"seed", "status", "accuracy", "loss"}``
    (accuracy and loss ``None`` when it failed)."""
    seed = repeat_seed(TrainingBudget.from_dict(training).seed, repeat)
    result = evaluate(path, space, {**(training or {}), "seed": seed} if repeat else training, dataset, device)
    ok = result.status == "ok"
    return {"seed": seed, "status": result.status, "accuracy": result.fitness if ok else None,
            "loss": result.metrics.get("val_loss") if ok else None}


def check_ranking(space: Any, dataset: str, training: dict[str, Any] | None, *,
                  weights: str | os.PathLike | bytes | dict[str, Any] | None = None, digest: str | None = None,
                  count: int = 20, seed: int = 0, paths: Sequence[dict[str, Any]] | None = None,
                  device: str = "cpu", confidence: float = 0.95, repeats: int = 1, score: str = "accuracy",
                  reference: str = "accuracy", calibration_images: int | None = None,
                  on_path: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Train ``count`` random paths of ``space`` (drawn from ``seed``; or the given ``paths``) stand-alone on
    ``dataset`` under ``training``, ``repeats`` times each, score them with the supernet of ``digest``/``weights``
    (on the first training's validation split), and return ``{"summary": check_summary(...), "paths": [{"path",
    "key", "supernet_accuracy", "supernet_loss", "trainings", "supernet", "standalone", "status"}, ...],
    "timings": {"standalone", "score"}}``. A path none of whose trainings succeeded is listed with its status and
    left out of tau. ``on_path(row)`` follows each path's stand-alone trainings (a live scatter plot)."""
    if repeats < 1:
        raise ValueError(f"`repeats` must be at least 1 (got {repeats}).")
    space = as_space(space)
    chosen = list(paths) if paths is not None else random_paths(space, seed, count)
    mark = time.perf_counter()
    split = TrainingBudget.from_dict(training).seed  # the validation split of the first stand-alone training
    options = {} if calibration_images is None else {"calibration_images": calibration_images}
    scored = score_paths(chosen, space, dataset, weights=weights, digest=digest, device=device, seed=split,
                         **options)
    score_seconds = time.perf_counter() - mark
    rows, standalone_seconds = [], 0.0
    for path, found in zip(chosen, scored["results"]):
        mark = time.perf_counter()
        trainings = [standalone(path, space, dataset, training, r, device) for r in range(repeats)]
        standalone_seconds += time.perf_counter() - mark
        statuses = [t["status"] for t in trainings]
        row = check_point({"path": path, "key": space.key(path), "supernet_accuracy": found.get("accuracy"),
                           "supernet_loss": found.get("val_loss"), "trainings": trainings,
                           "status": "ok" if "ok" in statuses else statuses[0]}, score, reference)
        rows.append(row)
        if on_path is not None:
            on_path(row)
    summary = check_summary(rows, score=score, reference=reference, confidence=confidence)
    return {"summary": summary, "paths": rows, "digest": scored["digest"],
            "timings": {"standalone": standalone_seconds, "score": score_seconds}}
