"""A trained network scored on the search's held-out test set (``data.test``: a registered set with the training
set's classes and channels), once, after training, on the leader: ``held_out_accuracy`` and ``held_out_images``
in the result's metrics. The search never trains, validates or ranks on it (``EvaluationResult.objectives``
leaves ``held_out_*`` out); the Best zip's README reports the figure and its ``predict.py`` reproduces it.

The images are read as the training set's (``evaluators.own_data``: Pillow, the channels converted, fitted to the
input size, values 0..1; corrupt files skipped) and normalised with the training split's statistics, as the
exported ``model.py`` does; kept in memory or decoded per batch as a training set would be
(``evaluators.own_split.whole``, ``NAS_DATA_CACHE_MB``).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from evaluators.budget import TrainingBudget
from evaluators.own_split import whole
from evaluators.training import validate


def held_out_spec(dataset: Any) -> dict[str, Any] | None:
    """The held-out set's description at the search's input size, or ``None`` when the search has none."""
    if not isinstance(dataset, Mapping) or not dataset.get("held_out"):
        return None
    return {**dataset["held_out"], "input_size": dataset["input_size"]}


def score(model: torch.nn.Module, spec: Mapping[str, Any], normalization: Mapping[str, list[float]],
          device: torch.device, budget: TrainingBudget) -> dict[str, Any]:
    """``{"held_out_accuracy", "held_out_images"}`` of ``model`` on the held-out set ``spec``."""
    images, labels = whole(spec, normalization, str(device))
    _, accuracy = validate(model, images, labels, budget)
    return {"held_out_accuracy": float(accuracy), "held_out_images": int(len(labels))}
