"""Every attempt of an individual as a row (``Attempt``): each start of its evaluation ends as ``ok``, ``pruned``,
``failed`` or ``lost``, with its reason, the exception's type and message, the last lines of its traceback (cut by
``evaluators.failure_text``), the node and device, and the peak memory when measured.

Only the search's loop writes them, with the individual they belong to, inside the same fenced transaction
(``webapp.control.recording``). Rows are keyed by (individual, number): a message read twice writes the same row
again, and a result that arrives after its attempt was given up as lost (a worker slower than its heartbeat)
replaces the ``lost`` row with what really happened.

Numbers: a worker counts the starts of one run of an individual from 1 (``transport.count_start``); a re-run
(``webapp.services.reruns``) starts that count again, so the row's number is the individual's
``attempt_base`` (attempts made before its latest re-run) plus the worker's count.
"""
from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils import timezone

from evaluators.failure_text import parse
from webapp.messaging import messages
from webapp.searches.models import Attempt, Individual

#: The longest message an attempt keeps (the individual keeps its own, longer, copy of the last one).
MESSAGE_CHARS = 2_000


def number_of(individual: Individual, worker_attempt: int) -> int:
    """The attempt's number among all of the individual's, from the worker's count within its current run."""
    return individual.attempt_base + max(int(worker_attempt or 0), 1)


def _peak(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _row(individual: Individual, number: int, **fields: Any) -> Attempt:
    row, _ = Attempt.objects.update_or_create(individual=individual, number=number, defaults={
        "run": individual.reruns, **fields})
    return row


def _failure_fields(reason: str, message: str) -> dict[str, Any]:
    failure = parse(message or "")
    return {"reason": reason[:32], "kind": failure.kind[:100], "message": failure.text[:MESSAGE_CHARS],
            "traceback": "\n".join(failure.traceback)}


def _outcome(ok: bool, pruned: bool, reason: str, message: str) -> dict[str, Any]:
    """The outcome of a result and, for a failed one, what went wrong."""
    if ok or pruned:
        return {"outcome": Attempt.Outcome.PRUNED if pruned else Attempt.Outcome.OK, "reason": "", "kind": "",
                "message": "", "traceback": ""}
    return {"outcome": Attempt.Outcome.FAILED, **_failure_fields(reason or "error", message)}


def record_result(individual: Individual, worker_attempt: int, ok: bool, pruned: bool, peak: Any,
                  started: Any, finished: Any) -> Attempt:
    """A worker's result for the attempt (the individual already holds it: status, failure, node, times)."""
    return _row(individual, number_of(individual, worker_attempt),
                **_outcome(ok, pruned, individual.failure, individual.message), node=individual.node,
                device=individual.device, slot=individual.slot, started=started, finished=finished,
                duration=individual.duration, peak_memory_bytes=_peak(peak))


def record_late(individual: Individual, message: messages.Result, started: dt.datetime | None,
                finished: dt.datetime | None) -> Attempt | None:
    """A result for an individual that is final already: the attempt it comes from was given up as lost (a
    worker slower than its heartbeat) while another gave the individual its result. Its row says what really
    happened; the individual is unchanged. A message read twice finds its row written: nothing changes."""
    number = number_of(individual, message.attempt)
    row = Attempt.objects.filter(individual=individual, number=number).first()
    if number > individual.attempts or (row is not None and row.outcome != Attempt.Outcome.LOST):
        return row
    payload, origin = message.result, message.origin
    return _row(individual, number, **_outcome(payload.ok, payload.pruned, payload.failure or "", payload.message),
                node=origin.node, device=origin.device, slot=origin.slot, started=started, finished=finished,
                duration=message.duration, peak_memory_bytes=_peak(payload.peak_memory_bytes))


def record_lost(individual: Individual, why: str, reason: str = "worker_lost") -> Attempt | None:
    """Its latest attempt (number ``individual.attempts``, on ``individual.node``) died with its worker and left
    no result; none was started: nothing to record. Written once: a row already there (a result, or the first
    word on its loss) stays."""
    if not individual.attempts:
        return None
    existing = Attempt.objects.filter(individual=individual, number=individual.attempts).first()
    if existing is not None:
        return existing
    return _row(individual, individual.attempts, outcome=Attempt.Outcome.LOST, **_failure_fields(reason, why),
                node=individual.node, device=individual.device, slot=individual.slot, started=individual.started,
                finished=individual.finished or timezone.now(), duration=None, peak_memory_bytes=None)


def record_unreadable(individual: Individual, message: messages.Skipped) -> Attempt | None:
    """An attempt handed back because its worker can neither read nor fetch the data set: failed, with the
    worker's reason (``data_unreadable``), on that worker's node; the evaluation goes on elsewhere."""
    if not message.attempt:  # handed back before it was counted: no attempt was made
        return None
    origin = message.origin
    return _row(individual, number_of(individual, message.attempt), outcome=Attempt.Outcome.FAILED,
                **_failure_fields(message.failure, message.reason), node=origin.node, device=origin.device,
                slot=origin.slot, started=individual.started, finished=timezone.now(), duration=None,
                peak_memory_bytes=None)


def before(individual: Individual, number: int) -> None:
    """A worker starts (or reports) attempt ``number``: each earlier attempt of the run that left no row died
    with its worker (a kill -9 whose task the broker handed out again). The latest one, whose node the individual
    still holds, is recorded with it; any before it (never seen started) without one."""
    if number <= individual.attempts or individual.status not in (Individual.Status.RUNNING,
                                                                  Individual.Status.QUEUED):
        return
    record_lost(individual, f"no result came back from this attempt: attempt {number} started after it")
    known = set(Attempt.objects.filter(individual=individual).values_list("number", flat=True))
    for missing in range(individual.attempt_base + 1, number):
        if missing not in known and missing != individual.attempts:
            _row(individual, missing, outcome=Attempt.Outcome.LOST, reason="worker_lost", kind="", traceback="",
                 message="its worker died before it reported a start", node="", device="", slot="")


def of(individual: Individual) -> list[Attempt]:
    return list(Attempt.objects.filter(individual=individual).order_by("number"))
