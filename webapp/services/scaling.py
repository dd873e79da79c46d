"""A search's gang scaling, as its page shows it: one row per (gang size, compression) among its finished
evaluations, with the training time per step, its compute / communication split, the bytes each rank sent per
step against dense AllReduce, and the speed against the same search's one-device evaluations.

Measured only: every number is a mean over what the individuals recorded (``evaluators.ranks.Gang.traffic``,
``evaluators.training``), never projected. One search has one compression; the comparison with and without it
is across searches, so each row carries its compression's name.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from webapp.searches.models import Individual, Search

#: What a row reads of an individual's metrics (JSON keys, so the schedule and other metrics stay in the DB).
FIELDS = ("metrics__gang", "metrics__ranks", "metrics__compression", "metrics__steps", "metrics__bytes_sent",
          "metrics__bytes_dense", "metrics__timings__train", "metrics__timings__compute",
          "metrics__timings__communicate")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _size(gang: Any, ranks: Any) -> int:
    """The gang's size: ``gang`` (written by gang workers, a string), else ``ranks`` (the traffic's), else 1."""
    for value in (gang, ranks):
        try:
            if value not in (None, ""):
                return max(1, int(value))
        except (TypeError, ValueError):
            continue
    return 1


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def gang_scaling(search: Search) -> dict[str, Any]:
    """``{"rows": [...], "baseline": seconds per step on one device or None}``; ``rows`` is empty when the
    search has no finished evaluation on a gang of two or more (the page then hides the panel).

    Each row: ``size``, ``compression`` (``none`` on one device: a gang of one is never compressed),
    ``evaluations``, ``step_seconds`` (mean of train seconds / steps), ``communicate_share`` (communication
    seconds over compute + communication, summed over the row's evaluations), ``sent_per_step`` and
    ``dense_per_step`` (bytes per rank per step, means), ``sent_share`` (bytes sent over dense, summed) and
    ``speed`` (the one-device mean seconds per step over this row's, or None without one-device evaluations).
    The candidates differ between rows: a row's mean is over whatever architectures ran at that size.
    """
    finished = Individual.objects.filter(search=search, status__in=(Individual.Status.DONE,
                                                                    Individual.Status.PRUNED))
    groups: dict[tuple[int, str], list[tuple]] = defaultdict(list)
    for gang, ranks, compression, *rest in finished.values_list(*FIELDS):
        size = _size(gang, ranks)
        groups[(size, str(compression or "none") if size > 1 else "none")].append(tuple(map(_number, rest)))
    if not any(size > 1 for size, _ in groups):
        return {"rows": [], "baseline": None}
    rows = [_row(size, compression, values) for (size, compression), values in sorted(groups.items())]
    baseline = next((r["step_seconds"] for r in rows if r["size"] == 1), None)  # one row: never compressed
    for row in rows:
        row["speed"] = baseline / row["step_seconds"] if baseline and row["step_seconds"] else None
    return {"rows": rows, "baseline": baseline}


def _row(size: int, compression: str, values: list[tuple]) -> dict[str, Any]:
    step_seconds, sent, dense, compute, communicate = [], [], [], 0.0, 0.0
    sent_total = dense_total = 0.0
    for steps, bytes_sent, bytes_dense, train, computing, communicating in values:
        if steps and train is not None:
            step_seconds.append(train / steps)
        if computing is not None and communicating is not None:
            compute, communicate = compute + computing, communicate + communicating
        elif train is not None and size == 1:
            compute += train  # one device exchanges nothing: all of its training is compute
        if size > 1 and steps and bytes_sent is not None and bytes_dense is not None:
            sent.append(bytes_sent / (size * steps))
            dense.append(bytes_dense / (size * steps))
            sent_total, dense_total = sent_total + bytes_sent, dense_total + bytes_dense
    return {"size": size, "compression": compression, "evaluations": len(values),
            "step_seconds": _mean(step_seconds),
            "communicate_share": communicate / (compute + communicate) if compute + communicate else None,
            "sent_per_step": _mean(sent), "dense_per_step": _mean(dense),
            "sent_share": sent_total / dense_total if dense_total else None}
