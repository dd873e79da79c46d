"""The evaluation worker's side of one packet: for each individual, decide whether to run it, run it with a
heartbeat, and push its result to the search's loop. No database access here (workers run on any host).

Rules (DESIGN.md, "Nothing is lost"):
- a result already pushed (``done`` marker) is not computed again: a redelivered message is skipped;
- a stopped search's queued individuals are skipped (reported ``skipped``; the loop re-sends them on resume);
- each start counts an attempt; past ``NAS_MAX_ATTEMPTS`` (a genome that kills its worker every time) the
  individual fails with ``worker_lost`` without running again;
- OOM, divergence, timeouts and invalid genomes are results (failed, with a reason), never exceptions.
"""
from __future__ import annotations

import io
import logging
import threading
import time
import traceback
from typing import Any

from django.conf import settings

from webapp.searches import packets, slots, transport

log = logging.getLogger(__name__)

class Heartbeat:
    """Refreshes the individual's heartbeat key while it is evaluated (a thread; the key expires if we die)."""

    def __init__(self, search_id: int, individual_id: int, info: dict[str, Any]) -> None:
        self.search_id, self.individual_id, self.info = search_id, individual_id, info
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="evaluation-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        transport.beat(self.search_id, self.individual_id, self.info)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(settings.NAS_HEARTBEAT_SECONDS):
            try:
                transport.beat(self.search_id, self.individual_id, self.info)
            except Exception as error:
                log.warning("heartbeat of individual %s failed: %s", self.individual_id, error)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        try:
            transport.clear_beat(self.search_id, self.individual_id)
        except Exception:
            pass


def run_evaluator(individual: dict[str, Any]) -> dict[str, Any]:
    """The evaluation itself: simulated, or trained with PyTorch (imported only here, once per process)."""
    evaluation = individual["evaluation"]
    if evaluation.get("mode") == "simulated":
        from evaluators.simulated import simulate

        return simulate(individual["key"], evaluation, epochs=individual["training"].get("epochs", 3))
    from evaluators.evaluate import evaluate

    device = slots.identity().device
    weights = io.BytesIO() if evaluation.get("keep_weights") else None
    result = evaluate(individual["genome"], individual["space"], individual["training"], individual["dataset"], device,
                      weights_to=weights)
    if weights is not None and result["status"] == "ok" and weights.tell():
        try:  # before the result is pushed, so the loop finds them when it records it
            transport.put_weights(individual["search"], individual["individual"], weights.getvalue())
            result["weights_bytes"] = weights.tell()
        except Exception as error:  # the result counts without its weights
            log.warning("weights of individual %s not stored: %s", individual["individual"], error)
            result["metrics"]["weights_error"] = f"{type(error).__name__}: {error}"
    return result


def _failed(reason: str, message: str) -> dict[str, Any]:
    return {"status": "failed", "fitness": None, "failure": reason, "message": message, "metrics": {}, "curve": [],
            "timings": {}, "device": "", "peak_memory_bytes": None}


def evaluate_individual(individual: dict[str, Any], task_id: str, packet_bytes: int) -> str:
    """Evaluate one individual of a packet and push what happened; returns ``done``, ``skipped`` or ``duplicate``."""
    search_id, individual_id = individual["search"], individual["individual"]
    me = slots.identity()
    base = {"search": search_id, "individual": individual_id, "number": individual["number"], "task_id": task_id,
            "node": me.node, "device": me.device, "slot": me.name}
    if transport.is_done(search_id, individual_id):
        log.info("individual %s of search %s already has a result: redelivery skipped", individual_id, search_id)
        return "duplicate"
    if transport.is_stopped(search_id):
        transport.push(search_id, {**base, "type": "skipped", "reason": "search stopped"})
        return "skipped"
    attempt = transport.count_start(search_id, individual_id)
    started = time.time()
    if attempt > settings.NAS_MAX_ATTEMPTS:
        result = _failed("worker_lost", f"the worker died during each of {settings.NAS_MAX_ATTEMPTS} attempts")
    else:
        transport.push(search_id, {**base, "type": "started", "attempt": attempt, "time": started})
        slots.set_current({"search": search_id, "individual": individual_id, "number": individual["number"]})
        try:
            with Heartbeat(search_id, individual_id, {**base, "attempt": attempt, "started": started, "pid": me.as_dict()["pid"]}):
                result = run_evaluator(individual)
        except Exception as error:  # the evaluator promises not to raise; if it does, it is still a result
            log.exception("evaluation of individual %s raised", individual_id)
            result = _failed("error", f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=5)}")
        finally:
            slots.set_current(None)
    finished = time.time()
    transport.push(search_id, {
        **base, "type": "result", "attempt": attempt, "result": result, "started": started, "finished": finished,
        "duration": finished - started, "packet_bytes": packet_bytes,
    })
    transport.mark_done(search_id, individual_id)
    return "done"


def evaluate_packet(data: Any, signature: Any, task_id: str) -> dict[str, int]:
    """Evaluate every individual of a signed packet (seed 000's ``ind_set``), in order; a count of outcomes.
    Raises :class:`packets.MalformedPacket` before touching anything when the message is not one."""
    packet = packets.parse(data, signature)
    share = packet.nbytes() // max(packet.ind_len, 1)
    outcomes: dict[str, int] = {}
    for individual in packet.ind_set:
        outcome = evaluate_individual(individual, task_id, share)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return outcomes
