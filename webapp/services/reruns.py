"""Re-run a search's failed individuals: the same genome and training seed, as a new attempt of the same
individual, through the same queue, signing and recording as every evaluation. The pages, the API and
``manage.py search rerun`` call :func:`rerun`.

What it changes, in one transaction on the search's row (the lock its loop's writes take, so it never races
them): each individual goes back to ``queued`` and not sent, its failure cleared (its attempts keep it), its
``reruns`` counted and its ``attempt_base`` set to the attempts it made (a worker counts the re-run's from 1);
the search's done and failed counts drop by as many, and its ``stats["reruns"]`` grows. The running loop sends
them (``SearchLoop._send_reruns``); a stopped search sends them when it is resumed; a finished (or failed) search
is reopened only when asked to extend it: its loop restarts, runs them, and ends it again.

What the strategy sees: each individual's first final outcome, told once. It was told the failure when it
happened (and may have bred from it); a re-run's result updates the individual, the counts, the best fitness and
the best list, and is never told (``SearchLoop._tell``).
"""
from __future__ import annotations

import dataclasses
from typing import Any

from django.db import transaction
from django.db.models import F

from webapp.messaging import transport
from webapp.searches import accounting, broadcast
from webapp.searches.kinds import kind_of
from webapp.searches.models import Individual, Search
from webapp.services import lifecycle

#: The statuses whose budget is spent: a re-run reopens them, and only when asked to extend.
ENDED = (Search.Status.FINISHED, Search.Status.FAILED)


class RerunError(Exception):
    """A refused re-run, with the HTTP status that says why; nothing was changed."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclasses.dataclass(frozen=True)
class Rerun:
    """What a re-run did: the individuals' numbers, the search's status after it, how many evaluations it added
    past a spent budget (``extended``), and a sentence for a person."""

    search: int
    numbers: list[int]
    status: str
    extended: int
    message: str

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def extend_text(search: Search, count: int) -> str:
    """What "re-run and extend" changes for a finished search, in words (the button's note and the 409)."""
    runs = search.evaluations_total
    return (f"Search #{search.pk} is {search.status}: its budget of {runs} evaluations is spent. Re-run and extend "
            f"reopens it: its loop restarts to evaluate {count} failed individual{'s' if count != 1 else ''} again, "
            f"{count} evaluation{'s' if count != 1 else ''} past its budget ({runs + count} in all); the strategy "
            "asks for no new candidate and is not told the new results; the search ends again when they do.")


def failed_of(search: Search) -> int:
    return Individual.objects.filter(search=search, status=Individual.Status.FAILED).count()


def _check_user(user: Any, search: Search) -> None:
    if search.owner_id != user.pk:  # staff see every search, and run only their own
        raise RerunError(f"Only its owner ({search.owner.username}) may re-run the individuals of search "
                         f"#{search.pk}.", 403)


def _chosen(search: Search, number: int | None) -> list[Individual]:
    """The individuals to re-run: the one numbered, or every failed one; a clear refusal otherwise."""
    rows = Individual.objects.filter(search=search).select_for_update()
    if number is None:
        failed = list(rows.filter(status=Individual.Status.FAILED).order_by("number"))
        if not failed:
            raise RerunError(f"Search #{search.pk} has no failed individual to re-run.", 409)
        return failed
    individual = rows.filter(number=number).first()
    if individual is None:
        raise RerunError(f"Search #{search.pk} has no individual #{number}.", 404)
    if individual.status in (Individual.Status.QUEUED, Individual.Status.RUNNING):
        raise RerunError(f"Individual #{number} is {individual.status}: only a failed individual can be re-run "
                         "(this one has not ended).", 409)
    if individual.status != Individual.Status.FAILED:
        raise RerunError(f"Individual #{number} succeeded ({individual.status}, fitness {individual.fitness}): only "
                         "a failed individual can be re-run.", 409)
    return [individual]


def rerun(user: Any, search: Search, number: int | None = None, extend: bool = False) -> Rerun:
    """Re-run individual ``number`` of ``search``, or every failed one (``None``); a finished search only with
    ``extend``. :class:`RerunError` (403, 404, 409: nothing changed) where it makes no sense."""
    _check_user(user, search)
    if not kind_of(search.config).architectures:
        raise RerunError(f"Search #{search.pk} trains weights: it has no individuals to re-run.", 409)
    with transaction.atomic():
        row = Search.objects.select_for_update().get(pk=search.pk)
        if row.status in (Search.Status.DRAFT, Search.Status.STOPPING):
            raise RerunError(f"Search #{row.pk} is {row.status}: "
                             + ("launch it first." if row.status == Search.Status.DRAFT
                                else "wait until it has stopped, then re-run."), 409)
        chosen = _chosen(row, number)
        reopen = row.status in ENDED
        plan = extend_text(row, len(chosen)) if reopen else ""
        if reopen and not extend:
            raise RerunError(plan + " Ask for it with extend (the button \"Re-run and "
                             "extend\", `manage.py search rerun ID --extend`, or \"extend\": true).", 409)
        _requeue(row, chosen, extended=len(chosen) if reopen else 0)
        if reopen:
            row.status, row.status_reason, row.finished = Search.Status.RUNNING, "", None
        row.save(update_fields=["status", "status_reason", "finished", "evaluations_done", "stats"])
        numbers = [i.number for i in chosen]
        reason = f"re-run of #{', #'.join(map(str, numbers))}" + (" (extended)" if reopen else "")
        broadcast.notify_many(row.pk, [
            *(("individual.rerun", broadcast.individual_event(i)) for i in chosen),
            ("search.progress", {"status": row.status, "done": row.evaluations_done, "total": row.evaluations_total,
                                 "best_fitness": row.best_fitness, "stats": accounting.summary(row.stats)}),
            ("search.status", {"status": row.status, "reason": reason}),
        ])
        if reopen:
            lifecycle.start_loop(row)
    when = {Search.Status.STOPPED: "queued: they run when the search is resumed"}.get(row.status, "queued")
    return Rerun(search=row.pk, numbers=numbers, status=row.status, extended=len(chosen) if reopen else 0,
                 message=f"Re-run of {len(numbers)} individual{'s' if len(numbers) != 1 else ''} of search #{row.pk} "
                         f"{when}" + (f". {plan}" if reopen else "")
                         + ("" if reopen else "."))


def _requeue(search: Search, individuals: list[Individual], extended: int) -> None:
    """Queued again, not sent, failure cleared; the counts follow (the caller saves the search)."""
    ids = [i.pk for i in individuals]
    transport.forget_run(search.pk, ids)  # before the commit: the loop may send them as soon as it lands
    Individual.objects.filter(pk__in=ids, status=Individual.Status.FAILED).update(
        status=Individual.Status.QUEUED, dispatched=None, reruns=F("reruns") + 1, attempt_base=F("attempts"),
        failure="", message="", fitness=None, started=None, finished=None, duration=None)
    for individual in individuals:
        individual.refresh_from_db()
    search.evaluations_done = max(search.evaluations_done - len(ids), 0)
    stats = search.stats or {}
    if "failed" in stats:
        stats["failed"] = max(stats["failed"] - len(ids), 0)
    stats["reruns"] = stats.get("reruns", 0) + len(ids)
    stats["extended"] = stats.get("extended", 0) + extended
    search.stats = stats
