"""How an evaluation reports its learning curve while it trains, and learns that it should stop.

An evaluator is given a :data:`Report` callable: it calls it every ``report_every`` training steps (once per
epoch when ``None``) with the steps so far, the epochs so far (fractional between epoch ends) and the
validation metrics at that point; a ``True`` answer stops the training, and the evaluation returns a result of
status ``pruned`` with its partial curve (and its weights as they were). No torch here.
"""
from __future__ import annotations

from collections.abc import Callable

#: ``report(step, epoch, metrics) -> stop``; an exception inside it is the reporter's: see :func:`safe`.
Report = Callable[[int, float, dict[str, float]], bool]


def safe(report: Report | None) -> Report:
    """``report`` made harmless: a missing reporter never stops, and a reporter that raises (Redis away) does
    not stop the training either (a lost progress message never blocks a result)."""

    def call(step: int, epoch: float, metrics: dict[str, float]) -> bool:
        if report is None:
            return False
        try:
            return bool(report(step, epoch, metrics))
        except Exception:
            return False

    return call


def report_points(steps_per_epoch: int, epochs: int, report_every: int | None) -> list[int]:
    """The global steps after which a training of ``epochs`` epochs of ``steps_per_epoch`` steps reports: every
    ``report_every`` steps, and always at the end of the last epoch (each epoch's end when ``None``)."""
    total = max(steps_per_epoch, 1) * max(epochs, 0)
    if total <= 0:
        return []
    every = max(steps_per_epoch, 1) if not report_every else max(int(report_every), 1)
    points = list(range(every, total + 1, every))
    if not points or points[-1] != total:
        points.append(total)
    return points
