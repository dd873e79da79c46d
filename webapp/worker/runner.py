"""The evaluation worker's side of one packet: for each individual, decide whether to run it, run it with a
heartbeat, and push what happened to the search's loop. No database access here (workers run on any host).

- a result already pushed (``done`` marker) is not computed again: a redelivered message is skipped;
- a stopped search's queued individuals are skipped (reported ``skipped``; the loop re-sends them on resume);
- a node that does not take work (``draining`` or ``paused``, ``webapp.messaging.node_state``) skips what it is
  handed, before counting an attempt: the loop sends it again, to another node; this is the one place that
  decides whether a worker takes work. A pause also interrupts the running evaluation (``hand_back``): it is
  reported ``skipped`` as well, its attempt not counted, and nothing of it is recorded;
- each start counts an attempt; past ``NAS_MAX_ATTEMPTS`` (a genome that kills its worker every time) the
  individual fails with ``worker_lost`` without running again;
- a worker that can neither read nor fetch the registered data set lists its node as one that cannot
  (``webapp.messaging.data_reach``) and hands the individual back (``skipped`` with ``data_unreadable``, its
  attempt counted but not against ``NAS_MAX_ATTEMPTS``): the loop re-places it on a node that can, or fails it
  naming every node tried when none is left. A listed node hands back what it is given of that search at once;
- OOM, divergence, timeouts and invalid genomes are results (failed, with a reason), never exceptions.
"""
from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

from django.conf import settings

from evaluators.failure_text import describe
from evaluators.own_data import DataSetUnreadable
from evaluators.reporting import Report
from evaluators.result import EvaluationResult
from webapp.messaging import data_reach, messages, node_state, signing, transport
from webapp.worker import artifacts, data_fetch, device_claims, hand_back, lost_ranks, oneshot, slots
from webapp.worker.reporter import reporter
from webapp.worker.heartbeat import evaluation_beat

log = logging.getLogger(__name__)


def run_evaluator(individual: dict[str, Any], report: Report | None = None) -> EvaluationResult:
    """The evaluation itself, on the devices this slot gets for it (``devices``): simulated, or trained with
    PyTorch (imported only here, once per process) by the one training path for any number of devices, wrapped
    once by what keeps weights and exports (``artifacts``); ``report`` receives its intermediate values and may
    stop it (``evaluators.reporting``)."""
    evaluation = individual["evaluation"]
    if evaluation.get("mode") != "simulated":
        try:
            individual = data_fetch.localised(individual)
        except DataSetUnreadable as error:
            return EvaluationResult.failed(data_fetch.FAILURE, str(error))

    def run(held: list[str], on_probe: Any = None) -> EvaluationResult:
        # ``on_probe``: a gang worker's scaling probe inside the evaluation (``device_claims.probe_inside``)
        if evaluation.get("mode") == "simulated":
            from evaluators.simulated import simulate

            return simulate(individual["key"], evaluation, epochs=individual["training"].get("epochs", 3),
                            gang=len(held), report=report, on_probe=on_probe)
        if evaluation.get("mode") == "supernet":  # a one-shot search's supernet, or one of its paths
            return oneshot.train_supernet(individual, held, report)
        if evaluation.get("mode") == "path":
            return oneshot.score_path(individual, held)
        gang = {"compression": evaluation["compression"]} if evaluation.get("compression") else {}  # a gang's
        if on_probe is not None:
            gang["on_probe"] = on_probe
        result = artifacts.evaluate_and_keep(_trained, individual, held, report=report,
                                             report_every=evaluation.get("report_every"), **gang)
        if evaluation.get("supernet_digest") and result.ok:  # a one-shot search's ranking check
            result = oneshot.with_supernet_score(individual, held, result)
        return result

    return device_claims.run_on_devices(individual, run)


def _trained(genome: Any, space: Any, training: Any, dataset: str, held: list[str], **options: Any) -> EvaluationResult:
    """``evaluators.evaluate.evaluate`` on ``held`` (one device, or a gang of them); an attempt of a gang that
    lost a rank to a signal is run again (``lost_ranks``)."""
    from evaluators.evaluate import evaluate

    device = held[0] if len(held) == 1 else held
    return lost_ranks.again_if_rank_lost(lambda: evaluate(genome, space, training, dataset, device, **options), held)


def _push(message: messages.Message) -> None:
    transport.push(message.origin.search, messages.to_dict(message))


def evaluate_individual(individual: dict[str, Any], task_id: str, packet_bytes: int) -> str:
    """Evaluate one individual of a packet and push what happened; returns ``done``, ``skipped`` or ``duplicate``."""
    search_id, individual_id = individual["search"], individual["individual"]
    me = slots.identity()
    origin = messages.Origin(search=search_id, individual=individual_id, number=individual["number"],
                             task_id=task_id, node=me.node, device=me.device, slot=me.name)
    if transport.is_done(search_id, individual_id):
        log.info("individual %s of search %s already has a result: redelivery skipped", individual_id, search_id)
        return "duplicate"
    if transport.is_stopped(search_id):
        _push(messages.Skipped(origin, reason="search stopped"))
        return "skipped"
    state = node_state.get(me.node)
    if not node_state.takes_work(state):
        _push(messages.Skipped(origin, reason=f"node {me.node} is {state}"))
        return "skipped"
    unreadable = data_reach.cannot_read(search_id, me.node)
    if unreadable is not None:  # sent before the loop learnt it: back to the loop, which places it elsewhere
        _push(messages.Skipped(origin, reason=unreadable[:500], failure=data_reach.FAILURE))
        return "skipped"
    attempt = transport.count_start(search_id, individual_id)
    started = time.time()
    if attempt > data_reach.allowed_attempts(search_id):
        return _finish(origin, attempt, started, packet_bytes, EvaluationResult.failed(
            "worker_lost", f"the worker died during each of {settings.NAS_MAX_ATTEMPTS} attempts"))
    try:
        return _attempt(individual, origin, attempt, started, packet_bytes)
    finally:  # only after what the attempt pushed: a loop that finds no beat finds its message waiting
        transport.clear_beat(search_id, individual_id)


def _attempt(individual: dict[str, Any], origin: messages.Origin, attempt: int, started: float,
             packet_bytes: int) -> str:
    """Run one counted attempt under its heartbeat and push what happened; ``done`` or ``skipped``."""
    search_id, individual_id, me = origin.search, origin.individual, slots.identity()
    _push(messages.Started(origin, attempt=attempt, time=started))
    slots.set_current({"search": search_id, "individual": individual_id, "number": individual["number"]})
    beat = {**dataclasses.asdict(origin), "attempt": attempt, "started": started, "pid": me.as_dict()["pid"]}
    try:
        with hand_back.interruptible(), evaluation_beat(search_id, individual_id, beat,
                                                        also=hand_back.pause_watch(me.node)):
            result = run_evaluator(individual, reporter(origin, attempt))
    except hand_back.HandedBack as handed:
        why = hand_back.reason(handed, me.node)
        log.warning("individual %s of search %s handed back: %s", individual_id, search_id, why)
        transport.uncount_start(search_id, individual_id)
        _push(messages.Skipped(origin, reason=why))
        return "skipped"
    except Exception as error:  # the evaluator promises not to raise; if it does, it is still a result
        log.exception("evaluation of individual %s raised", individual_id)
        result = EvaluationResult.failed("error", describe(error))
    finally:
        slots.set_current(None)
    if result.failure == data_reach.FAILURE:  # this node can neither read nor fetch the data set
        log.warning("individual %s of search %s handed back: %s", individual_id, search_id, result.message)
        data_reach.mark(search_id, me.node, result.message)
        _push(messages.Skipped(origin, reason=result.message[:500], failure=data_reach.FAILURE, attempt=attempt))
        return "skipped"
    return _finish(origin, attempt, started, packet_bytes, result)


def _finish(origin: messages.Origin, attempt: int, started: float, packet_bytes: int,
            result: EvaluationResult) -> str:
    finished = time.time()
    _push(messages.Result(origin, attempt=attempt, started=started, finished=finished, duration=finished - started,
                          packet_bytes=packet_bytes, result=result))
    transport.mark_done(origin.search, origin.individual)
    return "done"


def evaluate_packet(data: Any, signature: Any, task_id: str) -> dict[str, int]:
    """Evaluate every individual of a signed packet (seed 000's ``ind_set``), in order; a count of outcomes.
    Raises :class:`signing.MalformedPacket` before touching anything when the message is not one."""
    packet = signing.parse(data, signature)
    share = packet.nbytes() // max(packet.ind_len, 1)
    outcomes: dict[str, int] = {}
    for individual in packet.ind_set:
        outcome = evaluate_individual(individual, task_id, share)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return outcomes
