"""The supernet's progress per device: each point of its learning curve (a progress record) holds, beside the
gang's ``train_loss`` and the probes' ``val_accuracy``, what each rank measured, under names that carry the rank
and its device (``val_accuracy@1:cuda:1``), since a progress record's values are numbers only.

Per rank: ``val_accuracy`` and ``val_loss`` (mean over the probe paths that rank scored: the epoch's probes are
shared out among the ranks, path ``i`` to rank ``i % world``), ``probes`` (how many it scored) and
``train_seconds`` (its time in the epoch's training steps). No torch here.
"""
from __future__ import annotations

from typing import Any

#: What each rank reports after an epoch, in the order the page shows them.
PER_DEVICE = ("val_accuracy", "val_loss", "probes", "train_seconds")


def device_key(metric: str, rank: int, device: str) -> str:
    """The name of ``metric`` as measured by ``rank`` on ``device`` in a curve point."""
    return f"{metric}@{rank}:{device}"


def parse_key(name: str) -> tuple[str, int, str] | None:
    """``(metric, rank, device)`` of a per-device name, ``None`` for any other name."""
    metric, at, where = name.partition("@")
    rank, colon, device = where.partition(":")
    if not at or not colon or not rank.isdigit() or metric not in PER_DEVICE:
        return None
    return metric, int(rank), device


def per_device(point: dict[str, Any]) -> list[dict[str, Any]]:
    """The ranks of a curve point, in rank order: ``{"rank", "device", <metric>: value or None ...}``."""
    ranks: dict[int, dict[str, Any]] = {}
    for name, value in point.items():
        parsed = parse_key(str(name))
        if parsed is None:
            continue
        metric, rank, device = parsed
        ranks.setdefault(rank, {"rank": rank, "device": device, **dict.fromkeys(PER_DEVICE)})[metric] = value
    return [ranks[rank] for rank in sorted(ranks)]
