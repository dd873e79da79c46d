"""The evolutionary loop of one search: the only producer of work and the only writer of its individuals.

One iteration: renew the lease -> collect the workers' messages (record, tell, save the strategy state, all in
one transaction; then publish the events) -> re-send what went stale -> ask the strategy for as many candidates
as there are free slots, create them (committed) and send them as seed 000's packets -> stop when the strategy
is done, the user stopped it, or the lease was lost.
"""
from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from nas.packet import adaptive_ind_len, split_packets
from nas.spaces import space_from_config
from nas.strategies import get_strategy
from webapp.searches import accounting, broadcast, lease, packets, recording, strategy_store, transport, weights
from webapp.searches.models import Individual, Search

log = logging.getLogger(__name__)
IN_FLIGHT = (Individual.Status.QUEUED, Individual.Status.RUNNING)


class LeaseLost(RuntimeError):
    """Another loop holds the search now: this one must stop writing at once."""


class SearchLoop:
    def __init__(self, search_id: int, owner: str) -> None:
        self.search_id = search_id
        self.owner = owner
        self.search = Search.objects.get(pk=search_id)
        config = self.search.config
        self.space = space_from_config(config["space"])
        if self.search.strategy_state:
            self.strategy = strategy_store.load(self.search, self.space)
        else:
            strategy = config["strategy"]
            self.strategy = get_strategy(strategy["name"], self.space, strategy["seed"], **strategy["params"])
        self.pool = config["pool"]
        self.population = int(config["strategy"]["params"].get("population", 20))
        self._renewed = 0.0
        self._checked_stale = 0.0
        self._slots_seen = 0.0
        self._live_slots: list[dict[str, Any]] = []

    # --- the loop ----------------------------------------------------------------------------------------------

    def run(self) -> str:
        """Run until the search ends; returns why it ended (``finished``, ``stopped``, ``lease lost``)."""
        if not self.search.stats:
            self.search.stats = accounting.new_stats(time.time())
            self.search.save(update_fields=["stats"])
        self._send_unsent()
        try:
            while True:
                self._renew()
                status = Search.objects.filter(pk=self.search_id).values_list("status", flat=True).get()
                if status == Search.Status.STOPPING:
                    return self._end(Search.Status.STOPPED, "stopped by its owner")
                if status != Search.Status.RUNNING:
                    return status
                self.collect(wait=settings.NAS_LOOP_WAIT)
                self.check_stale()
                self.dispatch()
                if self.strategy.done and not self._in_flight().exists():
                    return self._end(Search.Status.FINISHED, "")
        except LeaseLost:
            log.warning("search %s: lease taken over; this loop stops", self.search_id)
            return "lease lost"

    def _renew(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._renewed > settings.NAS_LEASE_SECONDS / 3:
            if not lease.renew(self.search_id, self.owner):
                raise LeaseLost(self.search_id)
            self._renewed = now

    def _in_flight(self):
        return Individual.objects.filter(search_id=self.search_id, status__in=IN_FLIGHT)

    # --- results -----------------------------------------------------------------------------------------------

    def collect(self, wait: float) -> int:
        """Record every message waiting (up to ``wait`` seconds for the first); returns how many."""
        messages = transport.take_messages(self.search_id, wait)
        if not messages:
            return 0
        self._renew(force=True)
        events: list[tuple[str, dict[str, Any]]] = []
        resend: list[Individual] = []
        recorded: list[Individual] = []
        with transaction.atomic():
            search = Search.objects.select_for_update().get(pk=self.search_id)
            by_id = Individual.objects.in_bulk([m.get("individual") for m in messages if isinstance(m.get("individual"), int)])
            for message in messages:
                individual = by_id.get(message.get("individual"))
                if individual is None or individual.search_id != self.search_id:
                    log.warning("search %s: ignored a message for an unknown individual: %.200s", self.search_id, message)
                    continue
                kind = message.get("type")
                if kind == "started" and recording.mark_started(individual, message):
                    events.append(("individual.started", recording.individual_event(individual)))
                elif kind == "result":
                    result = recording.record_result(search, individual, message, nbytes=len(json.dumps(message)))
                    if result is not None:
                        self.strategy.tell(individual.number, result)
                        recorded.append(individual)
                        events.append(("individual.finished", recording.individual_event(individual)))
                elif kind == "skipped" and individual.status not in Individual.FINAL:
                    resend.append(individual)
            if recorded:
                self._save_progress(search, events, recorded)
            else:
                search.save(update_fields=["stats"])
            broadcast.notify_many(self.search_id, events)
        self.search = search
        transport.ack_messages(self.search_id, len(messages))
        weights.drop_waiting(search, messages)
        if resend and not transport.is_stopped(self.search_id):
            self._send(resend, resent=True)
        return len(messages)

    def _save_progress(self, search: Search, events: list, recorded: list[Individual] = ()) -> None:
        strategy_store.save(search, self.strategy)
        weights.keep_best(search, list(recorded))
        numbers = [candidate.id for candidate, _ in self.strategy.best(5)]
        ids = dict(Individual.objects.filter(search_id=self.search_id, number__in=numbers).values_list("number", "pk"))
        search.best = [ids[n] for n in numbers if n in ids]  # best first
        search.save(update_fields=["strategy_state", "stats", "best", "best_fitness", "evaluations_done"])
        events.append(("search.progress", self.progress(search)))

    def progress(self, search: Search) -> dict[str, Any]:
        return {"status": search.status, "done": search.evaluations_done, "total": search.evaluations_total,
                "best_fitness": search.best_fitness, "stats": accounting.summary(search.stats)}

    # --- lost work ---------------------------------------------------------------------------------------------

    def check_stale(self) -> None:
        """Re-send evaluations whose worker died (heartbeat expired), or that no free slot ever started;
        fail those that used up their attempts with ``worker_lost``."""
        now = time.monotonic()
        if now - self._checked_stale < settings.NAS_HEARTBEAT_SECONDS:
            return
        self._checked_stale = now
        wall = timezone.now()
        ttl, grace = settings.NAS_HEARTBEAT_TTL, settings.NAS_QUEUE_GRACE
        running = list(self._in_flight().filter(status=Individual.Status.RUNNING))
        beats = transport.heartbeats(self.search_id, [i.pk for i in running])
        stale = [i for i in running if beats.get(i.pk) is None and (wall - i.started).total_seconds() > ttl]
        idle = any(slot.get("current") is None for slot in self.live_slots())
        queued = self._in_flight().filter(status=Individual.Status.QUEUED, dispatched__isnull=False)
        lost = [i for i in queued if idle and (wall - i.dispatched).total_seconds() > grace]
        resend, failed = [], []
        for individual in stale + lost:
            if transport.starts(self.search_id, individual.pk) >= settings.NAS_MAX_ATTEMPTS:
                failed.append(individual)
            else:
                resend.append(individual)
        if failed:
            self._fail(failed, "worker_lost", f"the worker died during each of {settings.NAS_MAX_ATTEMPTS} attempts")
        if resend:
            log.warning("search %s: re-sending %d stale evaluation(s): %s", self.search_id, len(resend),
                        [i.number for i in resend])
            self._send(resend, resent=True)

    def _fail(self, individuals: list[Individual], reason: str, message: str) -> None:
        events: list[tuple[str, dict[str, Any]]] = []
        with transaction.atomic():
            search = Search.objects.select_for_update().get(pk=self.search_id)
            for individual in individuals:
                result = recording.fail_individual(search, individual, reason, message)
                if result is not None:
                    self.strategy.tell(individual.number, result)
                    events.append(("individual.finished", recording.individual_event(individual)))
            self._save_progress(search, events)
            broadcast.notify_many(self.search_id, events)
        self.search = search

    # --- work --------------------------------------------------------------------------------------------------

    def live_slots(self) -> list[dict[str, Any]]:
        now = time.monotonic()
        if now - self._slots_seen > 1.0:
            self._live_slots = transport.live_slots(self.pool)
            self._slots_seen = now
        return self._live_slots

    def dispatch(self) -> int:
        """Ask for as many candidates as there is room for (live slots plus one queued each), create, send."""
        if self.strategy.done:
            return 0
        slots = max(len(self.live_slots()), 1)
        room = 2 * slots - self._in_flight().count()
        if room <= 0:
            return 0
        candidates = self.strategy.ask(room)
        if not candidates:
            return 0
        with transaction.atomic():
            search = Search.objects.select_for_update().get(pk=self.search_id)
            individuals = recording.create_individuals(search, self.space, candidates)
            strategy_store.save(search, self.strategy)
            search.save(update_fields=["strategy_state"])
            broadcast.notify_many(
                self.search_id, [("individual.created", recording.individual_event(i)) for i in individuals]
            )
        self.search = search
        self._send(individuals)
        return len(individuals)

    def _send_unsent(self) -> None:
        """After a crash between creating individuals and sending them: send those never dispatched."""
        unsent = list(self._in_flight().filter(dispatched__isnull=True))
        if unsent:
            self._send(unsent, resent=True)

    def _send(self, individuals: list[Individual], resent: bool = False) -> None:
        """Send individuals as packets to the pool queue, each one task: at most seed 000's adaptive ``ind_len``
        each, and no fewer packets than live slots, so no slot idles while another holds two."""
        from webapp.searches.tasks import evaluate_batch

        config = self.search.config
        slots = max(len(self.live_slots()), 1)
        rounds = self.search.stats.get("packets", 0) // slots
        ind_len = adaptive_ind_len(self.population, slots, rounds) or 1
        now = timezone.now()
        for chunk in split_packets(individuals, slots, ind_len):
            task_id = uuid.uuid4().hex
            data, signature = packets.build([
                {"search": self.search_id, "individual": i.pk, "number": i.number, "key": i.key, "genome": i.genome,
                 "space": config["space"], "dataset": config["dataset"], "training": config["training"],
                 "evaluation": config["evaluation"]}
                for i in chunk
            ])
            Individual.objects.filter(pk__in=[i.pk for i in chunk]).update(
                task_id=task_id, dispatched=now, status=Individual.Status.QUEUED
            )
            evaluate_batch.apply_async(args=[data, signature], task_id=task_id, queue=self.pool)
            accounting.count_packet(self.search.stats, len(json.dumps(data)) + len(signature))
            if resent:
                self.search.stats["resent"] = self.search.stats.get("resent", 0) + len(chunk)
        Search.objects.filter(pk=self.search_id).update(stats=self.search.stats)

    # --- the end -----------------------------------------------------------------------------------------------

    def _end(self, status: str, reason: str) -> str:
        with transaction.atomic():
            search = Search.objects.select_for_update().get(pk=self.search_id)
            search.status, search.status_reason = status, reason
            if status == Search.Status.FINISHED:
                search.finished = timezone.now()
            search.save(update_fields=["status", "status_reason", "finished"])
            broadcast.notify_many(self.search_id, [("search.status", {**self.progress(search), "reason": reason})])
        log.info("search %s %s %s", self.search_id, status, reason)
        return status
