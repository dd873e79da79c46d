"""The loop of a weight search (seed 001): generations of an evolution strategy over the evaluation workers.

One generation ``g`` over ``N`` parts (the pool's live slots, at most ``P``):

1. ``evaluate``: ``N`` parts, each scoring its offspring share; their fitness values land in Redis (allgather).
2. ``gradient`` (``cu``, ``su``): ``N`` parts, each computing its gradient slice (``cu``) or its offspring's
   partial estimate (``su``); ``scalars`` skips this: every copy rebuilds the whole estimate from the fitness.
3. The loop assembles the estimate the same way every worker will (slices concatenated, partials summed in part
   order and the sum published, or rebuilt from the seeds), applies the optimizer step to its own copy (the
   authoritative one: saved in the database for resume and download), publishes the new digest and state, and
   records the generation (fenced by the lease) with its statistics, traffic and time split.

A part whose slot died (heartbeat gone) is sent again; parts are deterministic and idempotent, so the
generation's result never depends on who computed what. The search's ``weights`` config is in
``webapp.searches.weights_config``; the worker's side in ``webapp.worker.weights``.
"""
from __future__ import annotations

import io
import logging
import time
import uuid
from typing import Any

import numpy as np
from django.conf import settings

from evaluators.neuroevolution import WeightEvolution, WeightRun, export_files
from nas.neuroevolution import share, traffic
from webapp.control.recording import fenced
from webapp.control.shell import End, LoopShell, Send
from webapp.messaging import dispatch, signing, transport
from webapp.messaging import weights_transport as wire
from webapp.searches import broadcast
from webapp.searches.models import Search, WeightGeneration, Weights, WeightState

log = logging.getLogger(__name__)
POLL = 0.02


class Interrupted(Exception):
    """The search was stopped (or left the running state) in the middle of a generation."""


class PartFailed(Exception):
    """A part raised on its worker (out of memory, a bug): the search fails with its reason."""


class WeightLoop(LoopShell):
    """The loop of a weight search (the kind ``weights``)."""

    TASK = dispatch.EVOLVE_PART

    def __init__(self, search_id: int, owner: str, send: Send | None = None, device: str = "cpu") -> None:
        super().__init__(search_id, owner, send)
        self.config = self.search.config
        self.method = self.config["weights"]["method"]
        self.evolution = WeightEvolution(WeightRun.from_config(self.config), device)
        saved = WeightState.objects.filter(search_id=search_id).first()
        #: Why the search cannot begin (the kept weights it should start from are gone); it fails with this.
        self.cannot_start = ""
        if saved is not None:
            self.evolution.load_state(bytes(saved.data))
        elif self.config["network"].get("start") == "kept":
            self.cannot_start = self._start_from_kept(self.config["network"])
        self.parts_of: dict[int, int] = {}

    def _start_from_kept(self, network: dict[str, Any]) -> str:
        """Load the source individual's kept weights into generation 0 (every worker then fetches this state:
        its digest is not the seeded one's); the reason it cannot, if they are gone."""
        from evaluators.model_files import load_weights

        source, number = network["source_search"], network["source_individual"]
        kept = Weights.objects.filter(individual__search_id=source, individual__number=number).first()
        if kept is None:
            return (f"the kept weights of search #{source}'s individual #{number}, which this search starts from, "
                    f"are gone; clone the search to start again from search #{source}'s best")
        self.evolution.start_from(load_weights(io.BytesIO(bytes(kept.data))))
        return ""

    # --- the loop ---------------------------------------------------------------------------------------------

    def begin(self) -> None:
        self._publish()
        wire.clear_failures(self.search_id)  # a resume tries again

    def step(self) -> End | None:
        """One generation; the end once the planned generations are done, or when a part failed."""
        if self.cannot_start:
            return Search.Status.FAILED, self.cannot_start
        if self.evolution.generation >= self.config["weights"]["generations"]:
            return Search.Status.FINISHED, ""
        try:
            self.record(self.generation())
        except Interrupted:
            return None
        except PartFailed as error:
            return Search.Status.FAILED, str(error)
        return None

    def _publish(self) -> None:
        wire.publish_state(self.search_id, self.evolution.generation, self.evolution.digest(),
                           self.evolution.state_bytes())

    # --- one generation ---------------------------------------------------------------------------------------

    def generation(self) -> dict[str, Any]:
        """Run generation ``g`` over the workers; the evolution's copy ends at ``g + 1``. Returns its record."""
        evolution, g = self.evolution, self.evolution.generation
        population = evolution.run.es.population
        slots = len(transport.live_slots(self.config["pool"]))
        parts = self.parts_of.setdefault(g, max(1, min(slots, population)))
        started = time.perf_counter()
        digest = evolution.digest()
        self._phase(g, "evaluate", parts, digest)
        stored_fitness = wire.fitness_parts(self.search_id, g, parts)
        fitness = [float("nan") if v is None else v for j in range(parts) for v in stored_fitness[j]]
        if self.method != "scalars":
            self._phase(g, "gradient", parts, digest)
        gathered = time.perf_counter()
        loop_down = 0
        if self.method == "scalars":
            gradient = evolution.gradient_slice(g, fitness, 0, evolution.size)
        else:
            stored = wire.gradient_parts(self.search_id, g, parts)
            loop_down = sum(stored[j].nbytes for j in range(parts))
            if self.method == "cu":
                lengths = [len(share(evolution.size, parts, j)) for j in range(parts)]
                gradient = self._vectors([stored[j] for j in range(parts)], lengths)
            else:
                total = stored[0].copy()
                for j in range(1, parts):  # in part order, as every copy must see the same sum
                    total += stored[j]
                wire.put_gradient(self.search_id, g, parts, -1, total)  # the workers' copies read this sum
                gradient = self._vectors([total], [evolution.size])
        estimated = time.perf_counter()
        evolution.apply(gradient)
        accuracy = evolution.validate()
        self._publish()
        if g - 1 in self.parts_of:
            wire.forget_generation(self.search_id, g - 1, self.parts_of[g - 1])
        updated = time.perf_counter()
        return self._summary(g, parts, fitness, accuracy, loop_down,
                             {"gradient_local": estimated - gathered, "update": updated - estimated,
                              "total": updated - started})

    def _vectors(self, pieces: list[np.ndarray], lengths: list[int]) -> dict[str, np.ndarray]:
        if self.evolution.sigma is None:
            return {"theta": np.concatenate(pieces)}
        return {"mu": np.concatenate([p[:n] for p, n in zip(pieces, lengths)]),
                "sigma": np.concatenate([p[n:] for p, n in zip(pieces, lengths)])}

    def _stored(self, g: int, phase: str, parts: int) -> set[int]:
        found = (wire.fitness_parts if phase == "evaluate" else wire.gradient_parts)(self.search_id, g, parts)
        return {j for j in found if 0 <= j < parts}

    def _phase(self, g: int, phase: str, parts: int, digest: str) -> None:
        """Send the phase's parts and wait for all of them, sending again a part whose slot died while it ran it,
        or that no slot started within the heartbeat TTL plus the queue grace."""
        previous = self.parts_of.get(g - 1, parts)
        config = {key: self.config[key] for key in ("network", "dataset", "weights")}
        payloads = {j: {"search": self.search_id, "generation": g, "phase": phase, "part": j, "parts": parts,
                        "previous_parts": previous, "digest": digest, "config": config} for j in range(parts)}
        key = (wire.fitness_key if phase == "evaluate" else wire.gradient_key)(self.search_id, g, parts)
        sent: dict[int, float] = {}
        for j in set(range(parts)) - self._stored(g, phase, parts):  # some may be there from before a restart
            self._send(payloads[j])
            sent[j] = time.monotonic()
        seen: set[int] = set()
        checked = time.monotonic()
        patience = settings.NAS_HEARTBEAT_TTL + settings.NAS_QUEUE_GRACE
        while True:
            if transport.client().hlen(key) >= parts and len(self._stored(g, phase, parts)) == parts:
                return
            time.sleep(POLL)
            now = time.monotonic()
            if now - checked < settings.NAS_HEARTBEAT_SECONDS:
                continue
            checked = now
            if self.status() != Search.Status.RUNNING:
                raise Interrupted()
            failed = wire.failures(self.search_id)
            if failed:
                where, reason = next(iter(failed.items()))
                raise PartFailed(f"part {where} (generation:phase:part) failed on its worker: {reason}")
            missing = sorted(set(range(parts)) - self._stored(g, phase, parts))
            running = wire.running_parts(self.search_id, g, parts, phase, missing)
            seen |= running
            for j in missing:
                died = j in seen and j not in running
                never_started = j not in seen and now - sent.get(j, 0.0) > patience
                if died or never_started:
                    log.warning("search %s: generation %s, %s part %s of %s lost; sent again", self.search_id, g,
                                phase, j, parts)
                    seen.discard(j)
                    self._send(payloads[j])
                    sent[j] = now

    def _send(self, payload: dict[str, Any]) -> None:
        self.send(payload, signing.sign(payload), uuid.uuid4().hex, self.config["pool"])

    # --- records ----------------------------------------------------------------------------------------------

    def _summary(self, g: int, parts: int, fitness: list[float], accuracy: float, loop_down: int,
                 times: dict[str, float]) -> dict[str, Any]:
        reports = wire.reports(self.search_id, g, parts)
        evaluate = [r for name, r in reports.items() if name.startswith("evaluate:")]
        gradient = [r for name, r in reports.items() if name.startswith("gradient:")]
        evaluated: dict[str, int] = {}
        for report in evaluate:
            evaluated[report["node"]] = evaluated.get(report["node"], 0) + report["offspring"]
        measured_up = sum(r["bytes_up"] for r in reports.values())
        measured_down = sum(r["bytes_down"] for r in reports.values()) + loop_down
        evaluate_s = max((r["seconds"] for r in evaluate), default=0.0)
        gradient_s = max((r["seconds"] for r in gradient), default=0.0) + times["gradient_local"]
        # The workers apply the previous step (or fetch the weights) before their first part: update, not gather.
        update_s = times["update"] + max((r["prepare"] for r in evaluate), default=0.0)
        gather_s = max(times["total"] - evaluate_s - gradient_s - update_s, 0.0)
        finite = [f for f in fitness if np.isfinite(f)]
        vectors = 2 if self.evolution.sigma is not None else 1
        model = traffic(self.method, self.evolution.size, len(fitness), parts, value_bytes=8, vectors=vectors)
        return {
            "number": g, "best": max(finite, default=None), "mean": float(np.mean(finite)) if finite else None,
            "worst": min(finite, default=None), "validation_accuracy": accuracy, "workers": parts,
            "evaluated": evaluated,
            "traffic": {"bytes_up": measured_up, "bytes_down": measured_down,
                        "bytes": measured_up + measured_down, "fetched": sum(r["fetched"] for r in reports.values()),
                        "model_bytes": model["bytes"], "weights_bytes": len(fitness) * self.evolution.size * 4},
            "timings": {"evaluate": evaluate_s, "gather": gather_s, "gradient": gradient_s,
                        "update": update_s, "total": times["total"]},
        }

    def record(self, row: dict[str, Any]) -> None:
        """The generation, the new weights and the progress, in one fenced transaction; then its event."""
        with fenced(self.search_id, self.owner) as search:
            WeightGeneration.objects.update_or_create(search=search, number=row["number"],
                                                      defaults={k: v for k, v in row.items() if k != "number"})
            files = export_files(self.evolution, f"Weights evolved by search #{self.search_id} ({search.name}), "
                                                 f"generation {self.evolution.generation}")
            WeightState.objects.update_or_create(search=search, defaults={
                "generation": self.evolution.generation, "digest": self.evolution.digest(),
                "data": self.evolution.state_bytes(), "validation_accuracy": row["validation_accuracy"],
                "weights_pt": files["weights.pt"], "source": files["model.py"].decode()})
            search.evaluations_done = self.evolution.generation * self.evolution.run.es.population
            search.best_fitness = max(row["validation_accuracy"], search.best_fitness or 0.0)
            search.save(update_fields=["evaluations_done", "best_fitness"])
            broadcast.notify(self.search_id, "weights.generation", row)
        self.parts_of.pop(row["number"] - 1, None)
