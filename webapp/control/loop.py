"""The evolutionary loop of one search: the only producer of work, and the one process that writes the search's
individuals (through ``recording``, fenced by its lease).

One iteration: renew the lease -> collect the workers' messages (record, tell, save the strategy state, all in
one transaction; then publish the events) -> re-send what went stale -> ask the strategy for as many candidates
as there is room for, create them (committed) and send them as seed 000's packets -> stop when the strategy is
done, the user stopped it, or the lease was lost. A search with ``final`` then retrains its top genomes
(``webapp.control.final``) before it ends; their results are recorded, never told to the strategy.

The loop only orchestrates: it is given how to send a packet (``send``), so it runs without Celery in tests.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import time
import uuid
from typing import Any

from django.conf import settings
from django.utils import timezone

from nas.packet import adaptive_ind_len, split_packets
from nas.spaces import space_from_config
from nas.strategies import get_strategy
from webapp.control import attempts, faults, final, kept, placement, pruning, recording, strategy_store
from webapp.control.shell import End, LoopShell, Send
from webapp.control.slot_time import SlotTime
from webapp.messaging import allocation_state, data_reach, messages, signing, transport
from webapp.searches import broadcast, data_notices, final_runs
from webapp.searches.models import Individual, Search
from webapp.searches.data_config import dataset_argument

log = logging.getLogger(__name__)
IN_FLIGHT = (Individual.Status.QUEUED, Individual.Status.RUNNING)


@dataclasses.dataclass
class Batch:
    """What one collect did, for after its transaction: events to publish, individuals to send again."""

    events: list[tuple[str, dict[str, Any]]] = dataclasses.field(default_factory=list)
    recorded: list[Individual] = dataclasses.field(default_factory=list)
    finals: list[Individual] = dataclasses.field(default_factory=list)  # final runs recorded
    resend: list[Individual] = dataclasses.field(default_factory=list)


class SearchLoop(LoopShell):
    """The loop of an architecture search (the kind ``architecture``)."""

    def __init__(self, search_id: int, owner: str, send: Send | None = None) -> None:
        super().__init__(search_id, owner, send)
        config = self.search.config
        self.space = space_from_config(config["space"])
        if self.search.strategy_state:
            self.strategy = strategy_store.load(self.search, self.space)
        else:
            strategy = self.strategy_section(config)
            self.strategy = get_strategy(strategy["name"], self.space, strategy["seed"], **strategy["params"])
        self.pruning = pruning.Pruning(self.search)
        self.final = final.FinalTraining(self.search)
        self.pool = config["pool"]
        self.population = int(self.strategy_section(config)["params"].get("population", 20))
        self._checked_stale = 0.0
        self._checked_reruns = 0.0
        self._drained = False
        self.slots = SlotTime(self.search_id, self.pool)
        self._handlers = {messages.Started: self._started, messages.Progress: self._progress,
                          messages.Result: self._result, messages.Skipped: self._skipped}

    # --- the loop ----------------------------------------------------------------------------------------------

    def begin(self) -> None:
        if self.final.wanted and self.final.started():
            self.final.open()  # resumed during the final training: its runs' files are kept again
        self._send_unsent()

    def step(self) -> End | None:
        if self._drained:  # resumed while it was stopping: send what the workers skipped meanwhile
            self._drained = False
            self._send_unsent()
        self.collect(wait=settings.NAS_LOOP_WAIT)
        self.check_stale()
        self._send_reruns()
        self.dispatch()
        self._account()
        if self.strategy.done and not self._in_flight().exists():
            if self.final.wanted and not self.final.started() and self._start_final():
                return None  # the final training runs now
            return recording.outcome(self.search)  # finished, or failed when not one evaluation succeeded
        return None

    def _start_final(self) -> bool:
        """The search's own budget is spent: its top genomes are retrained (``final``); False when none succeeded."""
        genomes = final_runs.top_genomes(self.search_id, self.final.plan["top"])
        if not genomes:
            return False
        with recording.fenced(self.search_id, self.owner) as search:
            runs = self.final.start(search, self.space, genomes)
            broadcast.notify_many(self.search_id, [("individual.created", broadcast.individual_event(i)) for i in runs]
                                  + [("search.final", self.final.summary(search))])
        self.search = search
        log.info("search %s: final training of %d genome(s) for %d epochs", self.search_id, len(runs),
                 self.final.plan["epochs"])
        self.final.open()
        self._send(runs)
        return True

    def _account(self) -> None:
        """Sample the slots this search could use now; hand them to the search's accounting every few seconds."""
        now = time.time()
        if self.slots.sample(now):
            with recording.fenced(self.search_id, self.owner) as search:
                self._hand_over(search, now)
                recording.save_stats(search)
            self.search = search

    def _hand_over(self, search: Search, now: float) -> None:
        self.slots.hand_over(search.stats, now)

    def _in_flight(self):
        return Individual.objects.filter(search_id=self.search_id, status__in=IN_FLIGHT)

    # --- messages ----------------------------------------------------------------------------------------------

    def collect(self, wait: float) -> int:
        """Record every message waiting (up to ``wait`` seconds for the first); returns how many were taken."""
        raw = transport.take_messages(self.search_id, wait)
        if not raw:
            return 0
        self.renew(force=True)
        parsed = []
        for item in raw:
            try:
                parsed.append(messages.parse(item.data))
            except messages.MalformedMessage as error:
                log.warning("search %s: dropped a malformed message (%s): %.200s", self.search_id, error, item.data)
        batch = Batch()
        with recording.fenced(self.search_id, self.owner) as search:
            self._hand_over(search, time.time())  # saved below, with the results or alone
            ids = [m.origin.individual for m in parsed]
            by_id = Individual.objects.in_bulk(ids)
            for message in parsed:
                individual = by_id.get(message.origin.individual)
                if individual is None or individual.search_id != self.search_id:
                    log.warning("search %s: ignored a message for an unknown individual: %s", self.search_id, message.origin)
                    continue
                self._handlers[type(message)](search, individual, message, batch)
            if batch.recorded:
                batch.events.append(("search.progress", recording.save_progress(search, self.strategy, batch.recorded)))
            else:
                recording.save_stats(search)
            if batch.finals:
                batch.events.append(("search.final", self.final.summary(search)))
            self.pruning.save(search)
            broadcast.notify_many(self.search_id, batch.events)
        self.search = search
        transport.ack_messages(self.search_id, raw)
        kept.drop_waiting(search, [m.origin.individual for m in parsed if isinstance(m, messages.Result)])
        kept.drop_waiting(search, [i.pk for i in batch.finals], always=True)
        if batch.resend and not transport.is_stopped(self.search_id):
            self._send(batch.resend, resent=True)
        return len(raw)

    def _started(self, search: Search, individual: Individual, message: messages.Started, batch: Batch) -> None:
        if recording.mark_started(individual, message):
            batch.events.append(("individual.started", broadcast.individual_event(individual)))
            for lost in recording.lost_on_slot(individual):  # its slot's previous evaluation died with its worker
                log.warning("search %s: #%s lost its attempt %s on %s: queued again", self.search_id, lost.number,
                            lost.attempts, lost.slot)
                batch.events.append(("individual.lost", broadcast.individual_event(lost)))

    def _progress(self, search: Search, individual: Individual, message: messages.Progress, batch: Batch) -> None:
        if recording.record_progress(individual, message):
            # a final run is never stopped early: it trains its whole budget
            decision = self.pruning.progress(individual, message) if individual.role == Individual.Role.SEARCH else None
            batch.events.append(("individual.progress", {"id": individual.pk, "number": individual.number,
                                                          "point": individual.curve[-1],
                                                          **({"prune": individual.prune} if decision else {})}))

    def _result(self, search: Search, individual: Individual, message: messages.Result, batch: Batch) -> None:
        nbytes = len(json.dumps(messages.to_dict(message)))
        if individual.role == Individual.Role.FINAL:  # not part of the search: the strategy is not told
            if self.final.record(search, individual, message, nbytes):
                batch.finals.append(individual)
                batch.events.append(("individual.finished", broadcast.finished_event(individual)))
            return
        result = recording.record_result(search, individual, message, nbytes=nbytes)
        if result is not None:
            result = self.pruning.result(search, individual, message.result, result)
            self._tell(individual, result)
            batch.recorded.append(individual)
            batch.events.append(("individual.finished", broadcast.finished_event(individual)))

    def _tell(self, individual: Individual, result) -> None:
        """The strategy learns each individual's first final outcome, once: a re-run's (``reruns`` > 0) is
        recorded on the individual and in the counts, never told again (the strategy already bred from the
        failure it was told, and its archive only grows; ``webapp.services.reruns``)."""
        if not individual.reruns:
            self.strategy.tell(individual.number, result)

    def _skipped(self, search: Search, individual: Individual, message: messages.Skipped, batch: Batch) -> None:
        """A slot gave it back (search stopped, node paused, a gang worker told to wait, data set unreadable: its
        attempt and a notice recorded): sent again at once if the search runs, else not sent until a resume."""
        if individual.status in Individual.FINAL:
            return
        recording.mark_given_back(individual)
        if message.failure == data_reach.FAILURE:  # its worker cannot read the data set: placed elsewhere
            attempts.record_unreadable(individual, message)
            if data_notices.note(search.stats, message.origin.node, message.reason):
                batch.events.append(("search.data_unreadable", {"notices": data_notices.notices(search.stats)}))
        if search.status == Search.Status.RUNNING and not transport.is_stopped(self.search_id):
            batch.resend.append(individual)
        elif recording.mark_unsent(individual):
            batch.events.append(("individual.created", broadcast.individual_event(individual)))

    def drain(self) -> bool:
        """A stopped search sends nothing more but records the evaluations under way as they finish; True once
        none is left (workers skip its queued ones; a resume sends those again)."""
        self._account()
        self._drained = True
        # Nothing under way: record what waits and end at once, not "stopping" for a wait nothing ends (issue 36).
        under_way = self._in_flight().filter(status=Individual.Status.RUNNING).exists()
        self.collect(wait=settings.NAS_LOOP_WAIT if under_way else 0)
        running, lost = self._silent()
        if lost:  # their worker died: queued again, sent again after a resume
            with recording.fenced(self.search_id, self.owner):
                recording.requeue(lost)
        return len(lost) == len(running)

    # --- lost work ---------------------------------------------------------------------------------------------

    def _silent(self) -> tuple[list[Individual], list[Individual]]:
        """The running individuals, and those whose worker fell silent (no beat, started over the TTL ago). What
        waits is recorded before the verdict: a worker pushes its result before it clears its beat."""
        running = list(self._in_flight().filter(status=Individual.Status.RUNNING))
        beats = transport.heartbeats(self.search_id, [i.pk for i in running])
        wall, ttl = timezone.now(), settings.NAS_HEARTBEAT_TTL
        silent = {i.pk for i in running if beats.get(i.pk) is None and (wall - i.started).total_seconds() > ttl}
        if silent:  # an evaluation that ended just now has its result waiting: recorded, never taken for lost
            self.collect(wait=0)
            running = list(self._in_flight().filter(status=Individual.Status.RUNNING))
        return running, [i for i in running if i.pk in silent and (wall - i.started).total_seconds() > ttl]

    def check_stale(self) -> None:
        """Re-send evaluations whose worker died (heartbeat expired), or that no free slot ever started;
        fail those that used up their attempts with ``worker_lost``."""
        now = time.monotonic()
        if now - self._checked_stale < settings.NAS_HEARTBEAT_SECONDS:
            return
        self._checked_stale = now
        wall, ttl, grace = timezone.now(), settings.NAS_HEARTBEAT_TTL, settings.NAS_QUEUE_GRACE
        _, stale = self._silent()
        idle = any(slot.get("current") is None for slot in placement.readable_slots(self.search_id, self.live_slots()))
        queued = self._in_flight().filter(status=Individual.Status.QUEUED, dispatched__isnull=False)
        lost = [i for i in queued if idle and (wall - i.dispatched).total_seconds() > grace]
        if stale:  # each attempt that died with its worker leaves its reason and node
            with recording.fenced(self.search_id, self.owner):
                for individual in stale:
                    attempts.record_lost(individual, f"no heartbeat from {individual.slot or 'its worker'} for "
                                         f"{ttl:g} s: its worker died; sent again")
        resend, failed = [], []
        for individual in stale + lost:
            if transport.starts(self.search_id, individual.pk) >= data_reach.allowed_attempts(self.search_id):
                failed.append(individual)
            else:
                resend.append(individual)
        if failed:
            self._fail(failed, "worker_lost", f"the worker died during each of {settings.NAS_MAX_ATTEMPTS} attempts")
        if resend:
            log.warning("search %s: re-sending %d stale evaluation(s): %s", self.search_id, len(resend),
                        [i.number for i in resend])
            self._send(resend, resent=True)
            lost = [i for i in resend if i in stale]  # their attempt died with its worker: the pages say so
            if lost:
                with recording.fenced(self.search_id, self.owner):
                    broadcast.notify_many(self.search_id,
                                          [("individual.lost", broadcast.individual_event(i)) for i in lost])

    def _fail(self, individuals: list[Individual], reason: str, text: str) -> None:
        events: list[tuple[str, dict[str, Any]]] = []
        with recording.fenced(self.search_id, self.owner) as search:
            recorded = []
            for individual in individuals:
                if individual.role == Individual.Role.FINAL:
                    if self.final.fail(search, individual, reason, text):
                        events.append(("individual.finished", broadcast.individual_event(individual)))
                        events.append(("search.final", self.final.summary(search)))
                    continue
                result = recording.fail_individual(search, individual, reason, text)
                if result is not None:
                    result = self.pruning.result(search, individual, None, result)
                    self._tell(individual, result)
                    recorded.append(individual)
                    events.append(("individual.finished", broadcast.individual_event(individual)))
            events.append(("search.progress", recording.save_progress(search, self.strategy, recorded)))
            self.pruning.save(search)
            broadcast.notify_many(self.search_id, events)
        self.search = search

    # --- work --------------------------------------------------------------------------------------------------

    def live_slots(self) -> list[dict[str, Any]]:
        return self.slots.live_slots()

    def dispatch(self) -> int:
        """Ask for as many candidates as there is room for (live slots plus one queued each), create, send."""
        if self.strategy.done:
            return 0
        slots = max(len(self.live_slots()), 1)
        room = self.room(slots) - self._in_flight().count()
        if room <= 0:
            return 0
        candidates = self.strategy.ask(room)
        self._publish_pending(room, len(candidates))
        if not candidates:
            return 0
        with recording.fenced(self.search_id, self.owner) as search:
            individuals = recording.create_individuals(search, self.space, candidates)
            recording.save_strategy(search, self.strategy)
            broadcast.notify_many(
                self.search_id, [("individual.created", broadcast.individual_event(i)) for i in individuals]
            )
        self.search = search
        self._send(individuals)
        return len(individuals)

    def room(self, slots: int) -> int:
        """Evaluations this search keeps sent at once: one running and one queued per live slot."""
        return 2 * slots

    def strategy_section(self, config: dict[str, Any]) -> dict[str, Any]:
        """The configuration's strategy (a one-shot search names its own, ``oneshot.strategy``)."""
        return config["strategy"]

    def packet_fields(self, config: dict[str, Any], individual: Individual) -> dict[str, Any]:
        """What a packet item trains (its ``training`` and ``evaluation``): the search's, or a final run's."""
        return self.final.packet(config, individual)

    def _publish_pending(self, room: int, asked: int) -> None:
        """For gang workers' allocators: candidates sent and not started, and how many more before the
        strategy's next barrier (it gave fewer than asked) or its planned end (``webapp.messaging.allocation_state``)."""
        planned = self.strategy.planned()
        created = Individual.objects.filter(search_id=self.search_id).count()
        more = 0 if asked < room else (None if planned is None else max(0, planned - created - asked))
        waiting = self._in_flight().filter(status=Individual.Status.QUEUED).count() + asked
        if (waiting, more) != getattr(self, "_pending_seen", None):
            allocation_state.publish_pending(self.search_id, waiting, more)
            self._pending_seen = (waiting, more)

    def _send_reruns(self) -> None:
        """Re-runs its owner asked for while it runs (``webapp.services.reruns`` queues them unsent): sent here,
        through the same packets as any evaluation, checked at the heartbeat's pace."""
        now = time.monotonic()
        if now - self._checked_reruns >= settings.NAS_HEARTBEAT_SECONDS:
            self._checked_reruns = now
            self._send_unsent()

    def _send_unsent(self) -> None:
        """After a crash between creating individuals and sending them: send those never dispatched."""
        unsent = list(self._in_flight().filter(dispatched__isnull=True))
        if unsent:
            self._send(unsent, resent=True)

    def _send(self, individuals: list[Individual], resent: bool = False) -> None:
        """Send individuals as packets to the pool queue, each one task: at most seed 000's adaptive ``ind_len``
        each, and no fewer packets than live slots, so no slot idles while another holds two. The packets are
        recorded as sent (fenced) before they go; one lost between the two is sent again after the queue grace. To the
        pool queue, or the nodes that can read the data set (``placement``); ``resent`` ones first (``dispatch``)."""
        queues = placement.queues(self.search_id, self.pool, self.live_slots())
        if not queues:  # every live node said it cannot read the search's data set
            self._fail(individuals, data_reach.FAILURE, placement.nobody_reads(self.search_id))
            return
        config = self.search.config
        slots = max(len(self.live_slots()), 1)
        rounds = self.search.stats.get("packets", 0) // slots
        ind_len = adaptive_ind_len(self.population, slots, rounds) or 1
        packets = []
        for chunk in split_packets(individuals, slots, ind_len):
            data, signature = signing.build([
                {"search": self.search_id, "individual": i.pk, "number": i.number, "key": i.key, "genome": i.genome,
                 "space": config["space"], "dataset": dataset_argument(config), **self.packet_fields(config, i)}
                for i in chunk
            ])
            packets.append((chunk, data, signature, uuid.uuid4().hex))
        faults.freeze_point(self.search_id, "send")  # tests: a loop that stalls with packets in hand
        with recording.fenced(self.search_id, self.owner) as search:
            for chunk, data, signature, task_id in packets:
                recording.mark_sent(search, chunk, task_id, len(json.dumps(data)) + len(signature), resent)
            recording.save_stats(search)
        self.search = search
        for n, (_, data, signature, task_id) in enumerate(packets):
            self.send(data, signature, task_id, queues[n % len(queues)], resent)  # sent again: ahead of the queue

    # --- the end -----------------------------------------------------------------------------------------------

    def closing(self, search: Search) -> None:
        """The slot and device time sampled since the last hand-over, saved with the end."""
        self._hand_over(search, time.time())  # saved with the end
