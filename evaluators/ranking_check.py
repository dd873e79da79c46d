"""The ranking check: how far a supernet's ranking of paths can be trusted. ``count`` random paths are trained
stand-alone (the ordinary evaluation, :func:`evaluators.evaluate.evaluate`, under a short budget) and scored
with the supernet's weights (:func:`evaluators.path_scoring.score_paths`); Kendall's tau between the two, with
its confidence interval, is ``nas.oneshot.ranking_summary``'s.
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
from nas.oneshot.ranking import ranking_summary


def check_ranking(space: Any, dataset: str, training: dict[str, Any] | None, *,
                  weights: str | os.PathLike | bytes | dict[str, Any] | None = None, digest: str | None = None,
                  count: int = 20, seed: int = 0, paths: Sequence[dict[str, Any]] | None = None,
                  device: str = "cpu", confidence: float = 0.95,
                  on_path: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Train ``count`` random paths of ``space`` (drawn from ``seed``; or the given ``paths``) stand-alone on
    ``dataset`` under ``training``, score them with the supernet of ``digest``/``weights``, and return
    ``{"summary": ranking_summary(...), "paths": [{"path", "key", "supernet", "standalone", "status"}, ...],
    "timings": {"standalone", "score"}}``. A path whose stand-alone training failed is listed with its status
    and left out of tau. ``on_path(row)`` follows each path's stand-alone training (a live scatter plot)."""
    space = as_space(space)
    chosen = list(paths) if paths is not None else random_paths(space, seed, count)
    mark = time.perf_counter()
    split = TrainingBudget.from_dict(training).seed  # the validation split the stand-alone trainings use
    scored = score_paths(chosen, space, dataset, weights=weights, digest=digest, device=device, seed=split)
    score_seconds = time.perf_counter() - mark
    rows, standalone_seconds = [], 0.0
    for path, score in zip(chosen, scored["results"]):
        mark = time.perf_counter()
        result = evaluate(path, space, training, dataset, device)
        standalone_seconds += time.perf_counter() - mark
        row = {"path": path, "key": space.key(path), "supernet": score["accuracy"],
               "standalone": result.fitness if result.status == "ok" else None, "status": result.status}
        rows.append(row)
        if on_path is not None:
            on_path(row)
    usable = [r for r in rows if r["supernet"] is not None and r["standalone"] is not None]
    summary = ranking_summary([r["supernet"] for r in usable], [r["standalone"] for r in usable], confidence) \
        if len(usable) >= 2 else {"tau": None, "low": None, "high": None, "n": len(usable)}
    return {"summary": summary, "paths": rows, "digest": scored["digest"],
            "timings": {"standalone": standalone_seconds, "score": score_seconds}}
