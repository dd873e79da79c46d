"""What a slot leaves for the loop beside a trained individual's result: its weights and its exports.

A search keeps the files of its best ``evaluation.keep_weights`` individuals. The worker, which holds the
trained model, writes them at evaluation time (the web process never imports torch): ``weights.pt``, the
standalone ``model.py`` and ``model.onnx`` (both apply the input normalisation themselves), left in Redis for
the loop, which stores those of individuals that enter the best and drops the rest.

The loop publishes the fitness a result must reach to enter the best (``transport.admission``); it only
rises, so a result below it can never be kept, and its slot skips the export (seconds per architecture on a
CPU) and sends nothing.
"""
from __future__ import annotations

import io
import logging
import time
from collections.abc import Callable
from typing import Any

from evaluators.result import EvaluationResult
from webapp.messaging import transport

log = logging.getLogger(__name__)


def admitted(search_id: int, result: EvaluationResult) -> bool:
    """Whether ``result`` may still enter the kept best of its search."""
    if not result.ok:
        return False
    try:
        threshold = transport.admission(search_id)
    except Exception as error:  # Redis is briefly away: keep, the loop decides
        log.warning("admission of search %s unknown (%s): keeping the files", search_id, error)
        return True
    return threshold is None or result.fitness >= threshold


def evaluate_and_keep(evaluate: Callable[..., EvaluationResult], individual: dict[str, Any],
                      device: str | list[str], **options: Any) -> EvaluationResult:
    """Train ``individual`` on ``device`` (one, or a gang's) with ``evaluate`` (given ``options`` too) and, when its search keeps
    weights and it may enter the best, leave its files in Redis; the result names them in ``artifacts``."""
    keep = int(individual["evaluation"].get("keep_weights") or 0) > 0
    weights = io.BytesIO() if keep else None
    latency = individual["evaluation"].get("latency")
    result = evaluate(individual["genome"], individual["space"], individual["training"], individual["dataset"],
                      device, weights_to=weights, **({"latency": latency} if latency else {}), **options)
    if weights is None or not weights.tell() or not admitted(individual["search"], result):
        return result
    from evaluators.model_files import kept_files

    mark = time.perf_counter()
    files, problem = kept_files(individual["genome"], individual["space"], individual["dataset"],
                                weights.getvalue(), result.normalization)
    timings = {**result.timings, "export": time.perf_counter() - mark}
    metrics = dict(result.metrics)
    if problem:
        metrics["export_error"] = problem
    try:  # before the result is pushed, so the loop finds them when it records it
        transport.put_kept(individual["search"], individual["individual"], files)
    except Exception as error:  # the result counts without its files
        log.warning("files of individual %s not stored: %s", individual["individual"], error)
        metrics["weights_error"] = f"{type(error).__name__}: {error}"
        return result.with_fields(metrics=metrics, timings=timings)
    return result.with_fields(metrics=metrics, timings=timings,
                              artifacts={name: len(data) for name, data in files.items()})
