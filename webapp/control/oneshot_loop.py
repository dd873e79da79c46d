"""The loop of a one-shot search (seed 003, the kind ``oneshot``): the architecture loop's engine (its queue,
packets, signing, recording, lost-work rules and final training), driven through four phases, each known from
the database alone, so a stop, a resume or a new loop after a crash goes on where the last one was:

1. ``supernet``: one individual of role ``supernet`` (numbered after the most paths the strategy may ask for:
   the strategy numbers its paths from 0) whose evaluation is the supernet's whole training
   (``webapp.worker.oneshot``; its progress reports are the page's learning curve). Its weights go to Redis
   (for the workers) and to ``WeightState`` (for a resume and the downloads). On a gang worker it trains data
   parallel on the largest gang the worker allows (:func:`supernet_devices`). A lost worker's or a stopped
   training is sent again and resumes from its last checkpoint.
2. ``paths``: the strategy (``oneshot.strategy``) asks for paths, individuals of role ``search`` scored with
   the supernet's weights, many per packet; their fitness is that score, so the table, the charts and the
   strategy work as for any architecture search.
3. ``check`` (``oneshot.check_ranking: N``): N random paths trained stand-alone (role ``check``), each
   ``check_repeats`` times (blocks of N individuals, repeat r with training seed + r x 500), the first with the
   same path's supernet score (accuracy and loss) in its metrics; Kendall's tau-b between the supernet's
   ``check_score`` and the mean ``check_reference`` of the trainings, with its interval
   (``nas.oneshot.check_summary``), is stored in the search's stats (``oneshot.ranking``).
4. ``final``: the top paths by supernet score retrained (``webapp.control.final``, unchanged), then the end.
"""
from __future__ import annotations

import json
import logging
from typing import Any

from django.conf import settings
from django.db.models import Max

from nas.oneshot import check_point, check_summary, path_for_step, random_paths, repeat_seed
from nas.strategies import Candidate
from webapp.control import recording
from webapp.control.loop import Batch, SearchLoop
from webapp.control.shell import End
from webapp.messaging import messages, oneshot_transport
from webapp.searches import broadcast, oneshot_state
from webapp.searches.gang_config import MAX_DEVICES
from webapp.searches.models import Individual, Search, WeightState
from webapp.searches.oneshot_config import planned_evaluations

log = logging.getLogger(__name__)
#: Paths kept sent at once per live slot in the path search (scores are fast: packets of many paths).
PATHS_PER_SLOT = 32


def supernet_devices(config: dict[str, Any]) -> int:
    """The gang the supernet's training asks a gang worker for (``evaluation.devices`` of its packet): the
    search's ``evaluation.devices`` when a number, else (``auto``, or none given) every device the worker allows
    in one gang: the supernet is one long evaluation that nothing else waits beside. A plain worker's slot
    trains it on its one device."""
    wanted = config.get("evaluation", {}).get("devices", "auto")
    return wanted if isinstance(wanted, int) else MAX_DEVICES


class OneShotLoop(SearchLoop):
    """The loop of a one-shot search (the kind ``oneshot``)."""

    def __init__(self, search_id: int, owner: str, send=None) -> None:
        super().__init__(search_id, owner, send)
        self.oneshot = self.search.config["oneshot"]
        self._phase_seen = ""
        self._check_first: int | None = None  # the number of the ranking check's first individual

    def strategy_section(self, config: dict[str, Any]) -> dict[str, Any]:
        return config["oneshot"]["strategy"]

    def room(self, slots: int) -> int:
        return PATHS_PER_SLOT * slots

    # --- the loop ----------------------------------------------------------------------------------------------

    def begin(self) -> None:
        super().begin()
        saved = WeightState.objects.filter(search_id=self.search_id).first()
        if saved is not None and not oneshot_transport.has_supernet(self.search_id, saved.digest):
            oneshot_transport.put_supernet(self.search_id, saved.digest, bytes(saved.data))  # Redis lost it

    def step(self) -> End | None:
        if self._drained:
            self._drained = False
            self._send_unsent()
        self.collect(wait=settings.NAS_LOOP_WAIT)
        self.check_stale()
        self._send_reruns()
        self._account()
        phase = self.phase()
        self._tell_phase(phase)
        if phase == "supernet":
            return self._supernet_phase()
        if phase == "paths":
            self.dispatch()
            return None
        if phase == "check":
            self._check_phase()
            return None
        if self._in_flight().exists():
            return None
        if self.final.wanted and not self.final.started() and self._start_final():
            return None
        return recording.outcome(self.search)

    def phase(self) -> str:
        """Where the search is, from the database and the strategy (``oneshot_state.PHASES``)."""
        supernet = oneshot_state.supernet(self.search_id)
        if supernet is None or supernet.status != Individual.Status.DONE:
            return "supernet"
        if not self.strategy.done or self._in_flight().filter(role=Individual.Role.SEARCH).exists():
            return "paths"
        if self.oneshot["check_ranking"] and oneshot_state.ranking(self.search) is None:
            return "check"
        return "final"

    def _tell_phase(self, phase: str) -> None:
        """Store the phase when it changes and tell the page."""
        if phase != self._phase_seen:
            self._phase_seen = phase
            with recording.fenced(self.search_id, self.owner) as search:
                search.stats.setdefault("oneshot", {})["phase"] = phase
                recording.save_stats(search)
                broadcast.notify(self.search_id, "search.oneshot", oneshot_state.summary(search))
            self.search = search
            log.info("search %s: one-shot phase %s", self.search_id, phase)

    def _next_number(self, search: Search) -> int:
        last = Individual.objects.filter(search=search).aggregate(last=Max("number"))["last"]
        return 0 if last is None else last + 1

    def _create(self, genomes: list[dict[str, Any]], role: str, operator: str) -> list[Individual]:
        """Queued individuals of ``role`` for ``genomes``, numbered after every other (fenced), then sent."""
        with recording.fenced(self.search_id, self.owner) as search:
            first = self._next_number(search)
            candidates = [Candidate(id=first + n, genome=g, key=self.space.key(g), generation=0, parents=(),
                                    operator=operator) for n, g in enumerate(genomes)]
            rows = recording.create_individuals(search, self.space, candidates, role=role)
            broadcast.notify_many(self.search_id, [("individual.created", broadcast.individual_event(i))
                                                   for i in rows])
        self.search = search
        self._send(rows)
        return rows

    # --- 1. the supernet ---------------------------------------------------------------------------------------

    def _supernet_phase(self) -> End | None:
        supernet = oneshot_state.supernet(self.search_id)
        if supernet is None:
            first = path_for_step(self.space, self.oneshot["supernet"]["seed"], 0)  # a genome for the packet
            with recording.fenced(self.search_id, self.owner) as search:
                rows = recording.create_individuals(search, self.space, [Candidate(  # numbered after every path
                    id=planned_evaluations(search.config), genome=first, key="supernet", generation=0, parents=(),
                    operator="supernet")], role=Individual.Role.SUPERNET)
                for row in rows:
                    row.description = f"the supernet: every path of the {self.space.name} space, one per step"
                    row.save(update_fields=["description"])
                broadcast.notify_many(self.search_id, [("individual.created", broadcast.individual_event(i))
                                                       for i in rows])
            self.search = search
            self._send(rows)
        elif supernet.status == Individual.Status.FAILED:
            return Search.Status.FAILED, f"the supernet's training failed: {supernet.failure}: {supernet.message}"
        return None

    def _keep_supernet(self, search: Search, supernet: Individual) -> None:
        """The trained supernet's weights from Redis into the database (a resume republishes them)."""
        digest = supernet.metrics.get("digest")
        data = oneshot_transport.supernet(self.search_id, digest) if digest else None
        if data is None:
            log.warning("search %s: the supernet's weights %s are not in Redis", self.search_id, digest)
            return
        WeightState.objects.update_or_create(search=search, defaults={
            "generation": int(supernet.metrics.get("epochs") or 0), "digest": digest, "data": data,
            "validation_accuracy": supernet.fitness})

    # --- 3. the ranking check ----------------------------------------------------------------------------------

    def _check_options(self) -> tuple[int, str, str]:
        """``check_repeats``, ``check_score`` and ``check_reference`` (a search configured before they existed:
        one training, by accuracy on both sides)."""
        return (self.oneshot.get("check_repeats", 1), self.oneshot.get("check_score", "accuracy"),
                self.oneshot.get("check_reference", "accuracy"))

    def _check_phase(self) -> None:
        checks = list(oneshot_state.checks(self.search_id))
        repeats, score, reference = self._check_options()
        if not checks:
            paths = random_paths(self.space, self.search.config["training"]["seed"], self.oneshot["check_ranking"])
            self._create(paths * repeats, Individual.Role.CHECK, "check")  # repeat r: the paths' r-th block
            return
        if any(c.status not in Individual.FINAL for c in checks):
            return
        count = self.oneshot["check_ranking"]
        points = []
        for first, *others in zip(*(checks[r * count:(r + 1) * count] for r in range(repeats))):
            metrics = first.metrics or {}
            points.append(check_point({
                "number": first.number, "key": first.key, "status": first.status,
                "supernet_accuracy": metrics.get("supernet_score"), "supernet_loss": metrics.get("supernet_loss"),
                "trainings": [{"number": c.number, "status": c.status, "accuracy": c.fitness,
                               "loss": (c.metrics or {}).get("val_loss")} for c in (first, *others)]},
                score, reference))
        summary = check_summary(points, score=score, reference=reference)
        with recording.fenced(self.search_id, self.owner) as search:
            search.stats.setdefault("oneshot", {})["ranking"] = {**summary, "points": points}
            recording.save_stats(search)
            broadcast.notify(self.search_id, "search.oneshot", oneshot_state.summary(search))
        self.search = search
        log.info("search %s: ranking check tau %s over %d paths (%s)", self.search_id, summary["tau"],
                 summary["n"], summary["against"])

    # --- messages ----------------------------------------------------------------------------------------------

    def _result(self, search: Search, individual: Individual, message: messages.Result, batch: Batch) -> None:
        if individual.role not in (Individual.Role.SUPERNET, Individual.Role.CHECK):
            return super()._result(search, individual, message, batch)
        nbytes = len(json.dumps(messages.to_dict(message)))
        if recording.record_result(search, individual, message, nbytes=nbytes) is None:
            return
        batch.events.append(("individual.finished", broadcast.finished_event(individual)))
        if individual.role == Individual.Role.SUPERNET and individual.status == Individual.Status.DONE:
            self._keep_supernet(search, individual)
            oneshot_transport.forget_checkpoint(self.search_id)
            batch.events.append(("search.oneshot", oneshot_state.summary(search)))

    def _check_repeat(self, individual: Individual) -> int:
        """Which stand-alone training of its path a check individual is (0: the one scored on the supernet):
        the check's individuals are its paths, once per repeat, in blocks numbered one after the other."""
        if self._check_first is None:
            self._check_first = oneshot_state.checks(self.search_id).values_list("number", flat=True).first()
        first = self._check_first
        count = self.oneshot["check_ranking"]
        return (individual.number - first) // count if first is not None and count else 0

    def packet_fields(self, config: dict[str, Any], individual: Individual) -> dict[str, Any]:
        role = individual.role
        if role == Individual.Role.SUPERNET:
            return {"training": config["training"], "evaluation": {
                "mode": "supernet", "supernet": self.oneshot["supernet"], "devices": supernet_devices(config)}}
        digest = oneshot_state.digest(self.search_id)
        if role == Individual.Role.SEARCH:
            return {"training": config["training"], "evaluation": {
                "mode": "path", "digest": digest, "score": self.oneshot.get("path_score", "accuracy")}}
        if role == Individual.Role.CHECK:
            repeat = self._check_repeat(individual)
            training = {**config["training"], "seed": repeat_seed(config["training"]["seed"], repeat)}
            evaluation = {**config["evaluation"], "keep_weights": 0}
            return {"training": training, "evaluation": evaluation if repeat else {**evaluation,
                                                                                      "supernet_digest": digest}}
        return super().packet_fields(config, individual)
