"""Every write a search's loop makes: individuals created, sent, started, advanced, finished or failed, the
strategy's state, the best, the accounting and the end. Only the search's own loop calls these (it is the single
writer of its individuals), each inside :func:`fenced`, which checks in the same transaction that the loop still
holds the search's lease. Every write is idempotent, so a message read twice after a crash changes nothing the
second time.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from evaluators.result import EvaluationResult
from nas.spaces.base import SearchSpace
from nas.strategies import Candidate, Result, Strategy
from webapp.control import attempts, kept, strategy_store
from webapp.control.lease import LeaseLost
from webapp.messaging import messages
from webapp.searches import accounting
from webapp.searches.models import Individual, Search

#: How many of the best the search row names (the pages' "best" list).
BEST = 5


def when(timestamp: float | None) -> dt.datetime | None:
    return None if timestamp is None else dt.datetime.fromtimestamp(timestamp, tz=dt.timezone.utc)


@contextlib.contextmanager
def fenced(search_id: int, owner: str) -> Iterator[Search]:
    """A transaction on the search row, locked, in which ``owner`` still holds the lease; :class:`LeaseLost`
    (and nothing written) otherwise."""
    with transaction.atomic():
        search = Search.objects.select_for_update().get(pk=search_id)
        if search.lease_owner != owner:
            raise LeaseLost(f"search {search_id} is held by {search.lease_owner or 'nobody'}, not {owner}")
        yield search


# --- individuals -----------------------------------------------------------------------------------------------


def create_individuals(search: Search, space: SearchSpace, candidates: list[Candidate],
                       role: str = Individual.Role.SEARCH) -> list[Individual]:
    """One queued row per candidate (``role``: the strategy's, or final runs)."""
    rows = [
        Individual(
            search=search, number=c.id, genome=c.genome, key=c.key, description=space.describe(c.genome)[:500],
            generation=c.generation, parents=list(c.parents), operator=c.operator, task_id=uuid.uuid4().hex,
            role=role,
        )
        for c in candidates
    ]
    Individual.objects.bulk_create(rows)
    return list(Individual.objects.filter(search=search, number__in=[c.id for c in candidates]).order_by("number"))


def mark_sent(search: Search, individuals: list[Individual], task_id: str, nbytes: int, resent: bool) -> None:
    """The individuals travel in the packet ``task_id`` of ``nbytes`` bytes (sent again when ``resent``); the
    caller saves the search's stats (:func:`save_stats`) once for all its packets."""
    now = timezone.now()
    Individual.objects.filter(pk__in=[i.pk for i in individuals]).update(
        task_id=task_id, dispatched=now, status=Individual.Status.QUEUED)
    for individual in individuals:
        individual.task_id, individual.dispatched, individual.status = task_id, now, Individual.Status.QUEUED
    accounting.count_packet(search.stats, nbytes, resent=len(individuals) if resent else 0)


def requeue(individuals: list[Individual]) -> None:
    """Evaluations whose worker died while the search was stopping: queued again (a resume sends them on), each
    attempt recorded as lost."""
    for individual in individuals:
        attempts.record_lost(individual, f"no heartbeat from {individual.slot or 'its worker'} while the search "
                             "was stopping: its worker died")
    Individual.objects.filter(pk__in=[i.pk for i in individuals], status=Individual.Status.RUNNING).update(
        status=Individual.Status.QUEUED)


def mark_given_back(individual: Individual) -> None:
    """Its slot gave it back without a result (``skipped``): queued, no longer running on that slot, so the slot's
    next evaluation never takes it for an attempt that died there (``lost_on_slot``)."""
    if individual.status == Individual.Status.RUNNING:
        individual.status = Individual.Status.QUEUED
        individual.save(update_fields=["status"])


def mark_unsent(individual: Individual) -> bool:
    """A slot skipped it (the search was stopped): queued, not sent, until a resume sends it."""
    if individual.status in Individual.FINAL or individual.dispatched is None:
        return False
    individual.status, individual.dispatched = Individual.Status.QUEUED, None
    individual.save(update_fields=["status", "dispatched"])
    return True


def mark_started(individual: Individual, message: messages.Started) -> bool:
    """A worker started it: running, where and since when. False when it is final already (a late message)."""
    if individual.status in Individual.FINAL:
        return False
    origin = message.origin
    number = attempts.number_of(individual, message.attempt)
    attempts.before(individual, number)
    individual.status = Individual.Status.RUNNING
    individual.started = when(message.time) or timezone.now()
    individual.attempts = max(individual.attempts, number)
    individual.node, individual.device, individual.slot = origin.node, origin.device, origin.slot
    individual.save(update_fields=["status", "started", "attempts", "node", "device", "slot"])
    return True


def lost_on_slot(individual: Individual) -> list[Individual]:
    """A slot runs one evaluation at a time: when it starts ``individual``, every other individual of the search
    still ``running`` on that slot lost its attempt with its worker (kill -9, a crash). They are queued again at
    once, never shown as two running on one slot, and run again by the usual rules (the broker's redelivery of
    their task, or the loop's resend once no slot takes them within ``NAS_QUEUE_GRACE``)."""
    if not individual.slot:
        return []
    lost = list(Individual.objects.filter(search_id=individual.search_id, status=Individual.Status.RUNNING,
                                          slot=individual.slot, started__lte=individual.started)
                .exclude(pk=individual.pk))  # started before it: a message late in arriving never drops a later one
    now = timezone.now()
    for other in lost:
        attempts.record_lost(other, f"its slot {individual.slot} started #{individual.number}: this attempt died "
                             "with its worker")
    Individual.objects.filter(pk__in=[i.pk for i in lost], status=Individual.Status.RUNNING).update(
        status=Individual.Status.QUEUED, dispatched=now)
    for other in lost:
        other.status, other.dispatched = Individual.Status.QUEUED, now
    return lost


def record_progress(individual: Individual, message: messages.Progress) -> bool:
    """One more point of a running individual's learning curve. False when it is final already."""
    if individual.status in Individual.FINAL:
        return False
    point = {"epoch": message.epoch, "step": message.step, **message.metrics}
    individual.curve = [p for p in (individual.curve or []) if p.get("step") != message.step] + [point]
    individual.save(update_fields=["curve"])
    return True


def strategy_result(result: EvaluationResult) -> Result:
    """The strategy's view of an evaluation: fitness plus every numeric metric as an objective (a pruned one:
    the fitness it had when stopped, ``pruned``; the loop's pruning may replace it by its prediction)."""
    if result.pruned:
        return Result(fitness=result.fitness, objectives=result.objectives(), pruned=True)
    if not result.ok:
        return Result.failed(result.failure or "error")
    return Result(fitness=result.fitness, objectives=result.objectives())


def record_result(search: Search, individual: Individual, message: messages.Result, nbytes: int) -> Result | None:
    """Write a worker's result; ``None`` when the individual is final already (a late duplicate changes nothing
but the row of its own attempt, when that attempt was given up as lost: ``attempts.record_late``)."""
    if individual.status in Individual.FINAL:
        attempts.record_late(individual, message, when(message.started), when(message.finished))
        return None
    payload, origin = message.result, message.origin
    result = strategy_result(payload)
    number = attempts.number_of(individual, message.attempt)
    attempts.before(individual, number)
    individual.status = (Individual.Status.PRUNED if result.pruned else Individual.Status.DONE) if result.ok \
        else Individual.Status.FAILED
    epochs = payload.metrics.get("epochs")
    individual.epochs_trained = float(epochs) if isinstance(epochs, (int, float)) and result.ok else None
    individual.fitness = result.fitness if result.ok else None
    individual.metrics = {**payload.metrics, "timings": payload.timings, "peak_memory_bytes": payload.peak_memory_bytes,
                          **({"normalization": payload.normalization} if payload.normalization else {})}
    individual.curve = payload.curve or individual.curve or []
    individual.failure = "" if result.ok else (result.failure or "error")
    individual.message = payload.message[:10_000]
    # Where, when and how long come from the attempt whose result this is, never mixed with a later start of
    # another attempt (one sent again, still running elsewhere): the row says where it ran, and since when.
    individual.node, individual.device, individual.slot = origin.node, origin.device, origin.slot
    individual.attempts = max(individual.attempts, number)
    individual.started = when(message.started) or individual.started
    individual.finished = when(message.finished) or timezone.now()
    individual.duration = message.duration
    individual.packet_bytes = message.packet_bytes
    individual.save()
    attempts.record_result(individual, message.attempt, result.ok, result.pruned, payload.peak_memory_bytes,
                           when(message.started) or individual.started, individual.finished)
    accounting.count_result(
        search.stats, node=individual.node, device=individual.device, slot=individual.slot, ok=result.ok,
        duration=individual.duration, finished=message.finished, nbytes=nbytes,
        devices=float(payload.metrics.get("gang") or 1),  # a gang held that many devices
    )
    _count_final(search, individual, result)
    return result


def fail_individual(search: Search, individual: Individual, reason: str, text: str) -> Result | None:
    """Fail it without a worker's result (e.g. ``worker_lost`` after too many attempts)."""
    if individual.status in Individual.FINAL:
        return None
    now = timezone.now()
    individual.status, individual.failure, individual.message = Individual.Status.FAILED, reason, text
    individual.finished = now
    individual.save(update_fields=["status", "failure", "message", "finished", "attempts"])
    accounting.count_result(search.stats, node=individual.node or "-", device=individual.device or "-",
                            slot=individual.slot, ok=False, duration=0.0, finished=now.timestamp(), nbytes=0)
    result = Result.failed(reason)
    _count_final(search, individual, result)
    return result


def _count_final(search: Search, individual: Individual, result: Result) -> None:
    """The search's counts and best: of the strategy's individuals only (a final run is not part of the search's
    plan; its result is shown as the final training's, ``webapp.searches.final_runs``)."""
    if individual.role != Individual.Role.SEARCH:
        return
    search.evaluations_done += 1
    if result.ok and not result.pruned and (search.best_fitness is None or result.fitness > search.best_fitness):
        search.best_fitness = result.fitness


# --- the search ---------------------------------------------------------------------------------------------------


def _plan(search: Search, strategy: Strategy) -> None:
    """The planned total follows the strategy: generations whose children repeat known genomes reuse results
    and evaluate fewer, so the total shrinks to what will really be evaluated (exact once the search ends)."""
    planned = strategy.planned()
    if planned is not None:
        search.evaluations_total = planned


def save_strategy(search: Search, strategy: Strategy) -> None:
    strategy_store.save(search, strategy)
    _plan(search, strategy)
    search.save(update_fields=["strategy_state", "evaluations_total"])


def save_progress(search: Search, strategy: Strategy, recorded: list[Individual]) -> dict[str, Any]:
    """After results: the strategy's state and beliefs, the kept files of the best, the best and the counts, saved
    together; returns the ``search.progress`` event's data."""
    strategy_store.save(search, strategy)
    strategy_store.save_beliefs(search, strategy)
    _plan(search, strategy)
    kept.keep_best(search, recorded)
    numbers = [candidate.id for candidate, _ in strategy.best(BEST)]  # the strategy's order (nsga2: its front)
    ids = dict(Individual.objects.filter(search=search, number__in=numbers).values_list("number", "pk"))
    search.best = [ids[n] for n in numbers if n in ids]
    if (search.stats or {}).get("reruns"):
        search.best = best_with_reruns(search, search.best)
    search.save(update_fields=["strategy_state", "stats", "best", "best_fitness", "evaluations_done",
                               "evaluations_total"])
    return progress(search)


def best_with_reruns(search: Search, best: list[int]) -> list[int]:
    """The strategy was never told a re-run's result (``webapp.services.reruns``): a re-run that succeeded joins
    the best by fitness."""
    rows = Individual.objects.filter(Q(pk__in=best) | Q(search=search, reruns__gt=0, status=Individual.Status.DONE,
                                                        fitness__isnull=False))
    ranked = sorted(rows.values_list("pk", "fitness"), key=lambda row: (row[1] is None, -(row[1] or 0.0), row[0]))
    return [pk for pk, _ in ranked[:BEST]]


def save_stats(search: Search) -> None:
    search.save(update_fields=["stats"])


def start_accounting(search: Search, now: float) -> None:
    """A loop starts: the search runs from now (its first start also starts the clock of its speedup)."""
    if not search.stats:
        search.stats = accounting.new_stats(now)
    else:
        accounting.start_period(search.stats, now)
    search.save(update_fields=["stats"])


def outcome(search: Search) -> tuple[str, str]:
    """How a search whose work is all done ends: ``finished``, or ``failed`` with the reason when not one of its
    evaluations succeeded (``all 10 evaluations failed: DatasetMissing (10 of 10)``)."""
    rows = Individual.objects.filter(search=search, status__in=Individual.FINAL)
    if not rows.exists() or rows.exclude(status=Individual.Status.FAILED).exists():
        return Search.Status.FINISHED, ""
    reasons = Counter(rows.values_list("failure", flat=True))
    total = sum(reasons.values())
    reason, count = reasons.most_common(1)[0]
    return Search.Status.FAILED, (f"all {total} evaluations failed: {reason or 'error'}"
                                  + ("" if count == total else f" ({count} of {total})"))


def end_search(search: Search, status: str, reason: str) -> dict[str, Any]:
    """The search ends (``finished``, ``stopped``, ``failed``); returns the ``search.status`` event's data."""
    search.status, search.status_reason = status, reason
    accounting.end_period(search.stats, time.time())
    if status in (Search.Status.FINISHED, Search.Status.FAILED):
        search.finished = timezone.now()
        search.evaluations_total = search.evaluations_done  # what was evaluated is the whole plan: 100%
    search.save(update_fields=["status", "status_reason", "finished", "evaluations_total", "stats"])
    return {**progress(search), "reason": reason}


def progress(search: Search) -> dict[str, Any]:
    return {"status": search.status, "done": search.evaluations_done, "total": search.evaluations_total,
            "best_fitness": search.best_fitness, "stats": accounting.summary(search.stats),
            **({"pruning": search.stats["pruning"]} if "pruning" in (search.stats or {}) else {})}

