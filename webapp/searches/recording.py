"""The control loop's writes: individuals created, started, finished or failed. Only a search's own loop
calls these (it is the single writer of its individuals); every write is idempotent, so a message read twice
after a crash changes nothing the second time."""
from __future__ import annotations

import datetime as dt
import math
import uuid
from typing import Any

from django.utils import timezone

from nas.spaces.base import SearchSpace
from nas.strategies import Candidate, Result
from webapp.searches import accounting
from webapp.searches.models import Individual, Search


def when(timestamp: float | None) -> dt.datetime | None:
    return None if timestamp is None else dt.datetime.fromtimestamp(timestamp, tz=dt.timezone.utc)


def create_individuals(search: Search, space: SearchSpace, candidates: list[Candidate]) -> list[Individual]:
    """One queued row per candidate, each with the id of the task that will carry it."""
    rows = [
        Individual(
            search=search, number=c.id, genome=c.genome, key=c.key, description=space.describe(c.genome)[:500],
            generation=c.generation, parents=list(c.parents), operator=c.operator, task_id=uuid.uuid4().hex,
        )
        for c in candidates
    ]
    Individual.objects.bulk_create(rows)
    return list(Individual.objects.filter(search=search, number__in=[c.id for c in candidates]).order_by("number"))


def mark_started(individual: Individual, message: dict[str, Any]) -> bool:
    """A worker started it: running, where and since when. False when it is final already (a late message)."""
    if individual.status in Individual.FINAL:
        return False
    individual.status = Individual.Status.RUNNING
    individual.started = when(message.get("time")) or timezone.now()
    individual.attempts = max(individual.attempts, int(message.get("attempt", 1)))
    individual.node, individual.device, individual.slot = message["node"], message["device"], message["slot"]
    individual.save(update_fields=["status", "started", "attempts", "node", "device", "slot"])
    return True


def to_result(payload: dict[str, Any]) -> Result:
    """The strategy's view of an evaluation: fitness plus every numeric metric as an objective."""
    if payload.get("status") != "ok":
        return Result.failed(payload.get("failure") or "error")
    objectives = {
        name: float(value) for name, value in (payload.get("metrics") or {}).items()
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    }
    return Result(fitness=payload.get("fitness"), objectives=objectives)


def record_result(search: Search, individual: Individual, message: dict[str, Any], nbytes: int) -> Result | None:
    """Write a worker's result; ``None`` when the individual is final already (a late duplicate is ignored)."""
    if individual.status in Individual.FINAL:
        return None
    payload = message["result"]
    result = to_result(payload)
    individual.status = Individual.Status.DONE if result.ok else Individual.Status.FAILED
    individual.fitness = result.fitness if result.ok else None
    individual.metrics = {**(payload.get("metrics") or {}), "timings": payload.get("timings") or {},
                          "peak_memory_bytes": payload.get("peak_memory_bytes")}
    individual.curve = payload.get("curve") or []
    individual.failure = "" if result.ok else (result.failure or "error")
    individual.message = (payload.get("message") or "")[:10_000]
    individual.node, individual.device, individual.slot = message["node"], message["device"], message["slot"]
    individual.attempts = max(individual.attempts, int(message.get("attempt", 1)))
    individual.started = individual.started or when(message.get("started"))
    individual.finished = when(message.get("finished")) or timezone.now()
    individual.duration = float(message.get("duration") or 0.0)
    individual.packet_bytes = int(message.get("packet_bytes") or 0)
    individual.save()
    accounting.count_result(
        search.stats, node=individual.node, device=individual.device, slot=individual.slot, ok=result.ok,
        duration=individual.duration, finished=message.get("finished") or timezone.now().timestamp(), nbytes=nbytes,
    )
    search.evaluations_done += 1
    if result.ok and (search.best_fitness is None or result.fitness > search.best_fitness):
        search.best_fitness = result.fitness
    return result


def fail_individual(search: Search, individual: Individual, reason: str, message: str) -> Result | None:
    """Fail it without a worker's result (e.g. ``worker_lost`` after too many attempts)."""
    if individual.status in Individual.FINAL:
        return None
    now = timezone.now()
    individual.status, individual.failure, individual.message = Individual.Status.FAILED, reason, message
    individual.finished = now
    individual.save(update_fields=["status", "failure", "message", "finished", "attempts"])
    accounting.count_result(search.stats, node=individual.node or "-", device=individual.device or "-",
                            slot=individual.slot, ok=False, duration=0.0, finished=now.timestamp(), nbytes=0)
    search.evaluations_done += 1
    return Result.failed(reason)


def individual_event(individual: Individual) -> dict[str, Any]:
    """What a page needs to draw an individual (the websocket delta and the snapshot share it)."""
    return {
        "id": individual.pk, "number": individual.number, "status": individual.status, "fitness": individual.fitness,
        "key": individual.key, "description": individual.description, "generation": individual.generation,
        "operator": individual.operator, "node": individual.node, "device": individual.device, "slot": individual.slot,
        "failure": individual.failure, "attempts": individual.attempts,
        "params": (individual.metrics or {}).get("params"),
        "dispatched": individual.dispatched.timestamp() if individual.dispatched else None,
        "started": individual.started.timestamp() if individual.started else None,
        "finished": individual.finished.timestamp() if individual.finished else None,
        "duration": individual.duration,
    }
