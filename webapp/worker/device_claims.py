"""Which devices an evaluation gets. A plain worker's slot has one (``NAS_DEVICE``): a gang worker whose only
size is 1. A gang worker (``evalworker --device a,b,... --gang auto|N``) owns several devices of its host and
hands each candidate some of them.

The gang worker's pool processes share the host's devices through a ledger of claim files (one per device, created
exclusively, naming the claiming process; a claim whose process is gone is taken over). The gang size comes from
the search's ``evaluation.devices``: a number (the largest size this worker allows up to it), or ``auto``: the
allocator (``nas.allocation.decide``, the same call the benchmark's simulator makes) decides here, when the worker
pulls the candidate, from the whole cluster as the gang workers publish it (``webapp.messaging.cluster_state``:
every host's devices and what runs there, of any search, with its expected time left; this host's free devices
exactly, from its ledger), what the loop publishes (candidates waiting, how many more before a barrier or the end),
and the search's throughput model kept in Redis and updated by every evaluation that ends. Before deciding, where
``nas.allocation.ProbeRule`` asks, the worker runs a scaling probe (a few timed steps on one free device and, where
it has a wide part, on the widest free gang): its rates go into the model, the candidate's own length into the
decision (``Pending.known``) and into what the other workers' decisions see of the probed candidates that wait
(``Pending.probes``), as the simulator does. The probe is the evaluation's own first steps (:func:`probe_inside`,
``fit(on_probe=...)``): on one free device, or on the wide part's gang after a one-device part run apart
(``webapp.worker.rate_probe``); the decision is taken there, and one that keeps that gang trains on
(``allocation_continued``) instead of starting again; any other ends it and places the candidate as decided.
The choice, its reason and the expected finish of its plan go into the result's metrics (``devices``, ``gang``,
``allocation``, ``allocation_finish``; ``allocation_probe``: the probed seconds on one device; ``allocation_handed``:
how many times workers told to wait handed it back), so the individual records them.

Told to wait, the process holds the candidate (published as the host's ``waiting``) and decides again every
``poll`` seconds, unless ``nas.allocation.hand_back`` says another host's worker, with a free process and room,
would start it now: then it hands the candidate back (``HandedBack``: reported ``skipped``, the loop sends it again
ahead of the queue, its attempt not counted), at most ``handing_back.LIMIT`` times per candidate. A probed
candidate keeps its probe.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evaluators.result import EvaluationResult
from nas.allocation import (Allocation, Pending, ProbeRule, ThroughputModel, decide, hand_back, length_gang,
                            scaling_gang)
from nas.allocation import running_entry, single_from_gang, single_seconds
from webapp.messaging import allocation_state, cluster_state, transport
from webapp.worker import rate_probe, slots
from webapp.worker.hand_back import HandedBack

log = logging.getLogger(__name__)

def ledger_folder(node: str, owner: int | str) -> Path:
    """The claim files of the gang worker ``owner`` (its process id) on ``node``; removed when it exits."""
    return Path(tempfile.gettempdir()) / f"nas-gang-{node}-{owner}"


class Ledger:
    """Which of this worker's devices are held, shared by its pool processes through claim files."""

    def __init__(self, devices: list[str], folder: Path) -> None:
        self.devices = devices
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def _holder(self, index: int) -> int | None:
        try:
            pid = int((self.folder / f"device.{index}").read_text() or 0)
        except (OSError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            (self.folder / f"device.{index}").unlink(missing_ok=True)  # its holder died: the device is free
            return None
        except PermissionError:
            pass
        return pid

    def free(self) -> list[int]:
        return [index for index in range(len(self.devices)) if self._holder(index) is None]

    def claim(self, count: int) -> list[int] | None:
        """``count`` devices for this process, or ``None`` (and nothing held) when fewer are free."""
        held: list[int] = []
        for index in self.free():
            try:
                fd = os.open(self.folder / f"device.{index}", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                continue
            with os.fdopen(fd, "w") as claim:
                claim.write(str(os.getpid()))
            held.append(index)
            if len(held) == count:
                return held
        self.release(held)
        return None

    def release(self, indices: list[int]) -> None:
        for index in indices:
            (self.folder / f"device.{index}").unlink(missing_ok=True)


def ledger() -> Ledger:
    devices = os.environ["NAS_GANG_DEVICES"].split(",")
    return Ledger(devices, ledger_folder(os.environ.get("NAS_NODE", "node"), os.environ.get("NAS_GANG_OWNER", os.getppid())))


def choose(individual: dict[str, Any], sizes: tuple[int, ...], book: Ledger, host: str,
           known: float | None = None, holding: int = 0) -> Allocation:
    """The gang for ``individual`` on this worker: fixed by ``evaluation.devices``, or the allocator's (``known``:
    its seconds on one device as its scaling probe measured them; ``holding``: devices this process already holds
    for it, counted free)."""
    wanted = individual["evaluation"].get("devices", "auto")
    if wanted != "auto":
        fitting = [size for size in sizes if size <= int(wanted)] or [min(sizes)]
        gang = max(fitting)
        note = "" if gang == int(wanted) else f" (this worker allows {', '.join(map(str, sizes))})"
        return Allocation(host, gang, f"fixed: evaluation.devices is {wanted}{note}", "fixed")
    search_id = individual["search"]
    records, model, pending, now, free = _view(individual, sizes, book, host, known, holding)
    state = model.state_dict()  # as it was given: ``decide`` adds the running and probed candidates to the model
    choice = decide(model, list(records.values()), pending, now, here=host, free=free, search=search_id)
    handed, moved = 0, None
    if choice.host is None:  # told to wait: another host's worker may start it now
        handed = allocation_state.hand_backs(search_id, individual["individual"])
        moved = hand_back(model, list(records.values()), pending, now, host, free, search_id, handed)
    cluster_state.record_decision(search_id, {
        "individual": individual["individual"], "model": state, "records": list(records.values()),
        "pending": dataclasses.asdict(pending), "search": search_id, "now": now, "here": host, "free": free,
        "choice": choice.to_dict(), "handed": handed, "hand_back": moved.to_dict() if moved else None})
    return moved or choice


def _view(individual: dict[str, Any], sizes: tuple[int, ...], book: Ledger, host: str, known: float | None = None,
          holding: int = 0) -> tuple[dict[str, Any], ThroughputModel, Pending, float, dict[str, int]]:
    """What the decision for ``individual`` sees: every host's record (this one as its ledger says), the search's
    model, its pending work, now, and this host's exact free devices."""
    search_id = individual["search"]
    cluster_state.publish_host(host, len(book.devices), sizes)
    records = {r["host"]: r for r in cluster_state.read_hosts()}
    records[host] = {"host": host, "devices": len(book.devices), "sizes": list(sizes),
                     "running": records.get(host, {}).get("running", [])}  # this host as its ledger says
    model = allocation_state.load_model(search_id)
    pending = allocation_state.read_pending(search_id, known, individual["individual"])
    return records, model, pending, time.time(), {host: len(book.free()) + holding}


def _length_gang(individual: dict[str, Any], sizes: tuple[int, ...], book: Ledger, host: str) -> int:
    """The gang to time ``individual``'s length on (``nas.allocation.length_gang``), 0 for none: where a short and a
    long candidate would be placed alike, its probe would only cost time."""
    records, model, pending, now, free = _view(individual, sizes, book, host)
    return length_gang(model, list(records.values()), pending, now, host, free, individual["search"])


def _wide(individual: dict[str, Any], sizes: tuple[int, ...], book: Ledger, host: str, model: ThroughputModel,
          rule: ProbeRule) -> tuple[int, int]:
    """The gang of the probe's wide part as the rule asks for it (the widest the free devices allow while the search
    has too few, ``ProbeRule.wide_gang``) and as it runs (``nas.allocation.scaling_gang``): only where the scaling it
    reads could change where ``individual`` goes, elsewhere it would only hold those devices for its setup; on the
    narrower gang good scaling would give it here, whose probe is then the start of its evaluation. 1: none."""
    asked = rule.wide_gang(model, sizes, len(book.free()))
    return asked, _scaling_gang(individual, sizes, book, host, asked) if asked > 1 else 1


def _scaling_gang(individual: dict[str, Any], sizes: tuple[int, ...], book: Ledger, host: str, wide: int) -> int:
    """The gang of a probe of up to ``wide`` devices for ``individual`` on this host; 1: none."""
    records, model, pending, now, free = _view(individual, sizes, book, host)
    return scaling_gang(model, list(records.values()), pending, now, host, wide, free, individual["search"])


def probe(individual: dict[str, Any], sizes: tuple[int, ...], book: Ledger, host: str) -> tuple[float | None, bool]:
    """The scaling probe before ``auto`` places ``individual``, where ``ProbeRule`` asks for one: on one device of
    this host's free ones and, while the search has too few, on the widest gang they allow; the rates go into the
    search's model and the candidate's seconds on one device into the shared list of probed waiting ones. Returns
    those seconds, or ``None`` (no probe wanted, or it failed: decide without it), and whether that is final
    (``False``: no device was free to probe on; the caller may try again while it waits)."""
    if individual["evaluation"].get("devices", "auto") != "auto":
        return None, True
    search_id, rule = individual["search"], ProbeRule()
    model = allocation_state.load_model(search_id)
    if not rule.wanted(model, sizes):
        return None, True
    if not book.free():
        return None, False
    asked, wide = _wide(individual, sizes, book, host, model, rule)
    if asked == 1 and not _length_gang(individual, sizes, book, host):  # while the search lacks its efficiency
        return None, False  # probes, every probe times the length; later only where it could change the placement
    held = book.claim(wide) or book.claim(1)
    if held is None:
        return None, False
    try:
        devices = [book.devices[index] for index in held]
        gangs = [devices[:1]] + ([devices] if len(devices) > 1 else [])
        answer = rate_probe.measure(individual, gangs)
    finally:
        book.release(held)
    if answer is None:
        return None, True
    allocation_state.record_rates(search_id, host, answer["rates"])
    single = single_seconds(answer["rates"], answer["steps"])
    allocation_state.record_probed(search_id, individual["individual"], single)
    log.info("individual %s: probe %s s, rates %s, ~%.1f s on one device", individual["individual"],
             answer["seconds"], answer["rates"], single)
    return single, True


def run_on_devices(individual: dict[str, Any], evaluate: Callable[[list[str]], EvaluationResult]) -> EvaluationResult:
    """``evaluate(devices)`` on this slot's device, or, on a gang worker, on the devices it claims for
    ``individual`` (:func:`run_on_gang`)."""
    if not os.environ.get("NAS_GANG_DEVICES"):
        return evaluate([slots.identity().device])
    return run_on_gang(individual, evaluate)


def run_on_gang(individual: dict[str, Any], evaluate: Callable[..., EvaluationResult],
                poll: float = 0.2) -> EvaluationResult:
    """Claim the devices the allocation asks for (waiting while others hold them), run ``evaluate(devices)``,
    release them, and record the choice in the result. The probe is the evaluation's first steps
    (:func:`probe_inside`), on one device or on the wide part's gang: a decision that keeps that gang goes on
    training there."""
    book = ledger()
    sizes = tuple(int(s) for s in os.environ["NAS_GANG_SIZES"].split(","))
    host = os.environ.get("NAS_NODE", "node")
    search_id, number = individual["search"], individual["individual"]
    known = allocation_state.probed_of(search_id, number)  # probed by a worker that handed it back
    probed = known is not None
    inside, apart = (0, True) if probed else inside_gang(individual, sizes, book, host)
    if inside:
        outcome = probe_inside(individual, sizes, book, host, evaluate, inside, apart)
        if isinstance(outcome, EvaluationResult):
            return outcome
        known, probed = outcome
    waiting = f"{os.getpid()}-{number}"
    since = time.time()
    try:
        while True:
            if not probed:  # until a device was free to probe on, or the probe is not wanted
                known, probed = probe(individual, sizes, book, host)
            choice = choose(individual, sizes, book, host, known)
            if choice.rule == "handback":
                hand_back_now(individual, choice)
            held = book.claim(choice.gang) if choice.host is not None else None
            if held is not None:
                break
            if transport.is_stopped(search_id):
                allocation_state.forget_probed(search_id, number)
                return EvaluationResult.failed("stopped", "the search stopped while its candidate waited for devices")
            cluster_state.publish_wait(host, waiting, {"search": search_id, "since": since, "seen": time.time(),
                                                        "gang": choice.gang})
            time.sleep(poll)
    finally:
        cluster_state.remove_wait(host, waiting)
    token, observed = _started(individual, book, host, held, known)
    started = time.perf_counter()
    try:
        result = evaluate([book.devices[index] for index in held])
    finally:
        book.release(held)
        cluster_state.remove_run(host, token)
    return _recorded(individual, result, book, host, held, choice, known, time.perf_counter() - started, observed)


def _started(individual: dict[str, Any], book: Ledger, host: str, held: list[int], known: float | None
             ) -> tuple[str, int | None]:
    """Publish the evaluation starting on ``held`` (this host's record, the nodes page); returns its token and how
    many evaluations the search's model had observed (its duration fades from its start:
    ``ThroughputModel.observe``; ``None`` where the model could not be read: it then counts in full)."""
    search_id, devices = individual["search"], ",".join(book.devices[index] for index in held)
    token = f"{os.getpid()}-{held[0]}"
    model = allocation_state.read_model(search_id)
    entry = running_entry(search_id, len(held), time.time(), model or ThroughputModel(), host, known)
    if model is None:  # how many the search had observed is unknown: its duration will count in full
        entry.pop("observed")
    cluster_state.publish_run(host, token, entry)
    allocation_state.forget_probed(search_id, individual["individual"])  # its record carries it now
    slots.set_current({"search": search_id, "individual": individual["individual"], "number": individual["number"],
                       "devices": devices, "gang": len(held)})  # the nodes page shows the gang it holds
    return token, entry.get("observed")


def _recorded(individual: dict[str, Any], result: EvaluationResult, book: Ledger, host: str, held: list[int],
              choice: Allocation, known: float | None, seconds: float, observed: int | None = None,
              continued: bool = False) -> EvaluationResult:
    """``result`` with the allocation in its metrics, its duration in the search's model."""
    gang = len(held)
    if result.ok:
        allocation_state.record_duration(individual["search"], host, gang, seconds, since=observed)
    metrics = {**result.metrics, "devices": ",".join(book.devices[index] for index in held), "gang": str(gang),
               "allocation": choice.reason[:300]}
    if choice.finish is not None:
        metrics["allocation_finish"] = f"{choice.finish:.0f}"
    if known is not None:
        metrics["allocation_probe"] = f"{known:.1f}"
    if continued:
        metrics["allocation_continued"] = "probe"  # trained on from its probe's steps, not started again
    handed = allocation_state.hand_backs(individual["search"], individual["individual"])
    if handed:
        metrics["allocation_handed"] = str(handed)  # workers told to wait handed it back this many times
    return result.with_fields(metrics=metrics)


def hand_back_now(individual: dict[str, Any], choice: Allocation) -> None:
    """Hand ``individual`` back to the queue as ``choice`` (a ``handback``) says: counted, then ``HandedBack``."""
    allocation_state.count_hand_back(individual["search"], individual["individual"])
    raise HandedBack(choice.reason[:500])


def inside_gang(individual: dict[str, Any], sizes: tuple[int, ...], book: Ledger, host: str) -> tuple[int, bool]:
    """The gang whose first steps of ``individual``'s evaluation are its probe (:func:`probe_inside`), 0 for none,
    and whether a one-device part runs apart first: ``auto``, a trained or simulated evaluation, ``ProbeRule``
    asking for a probe; the wide part's gang where it has one (:func:`_wide`, with its one-device part: the
    efficiency); one device while the search lacks its efficiency probes; else, where its length could change where
    it goes, the gang to time it on (:func:`_length_gang`, alone where it is wider than one device and free)."""
    evaluation = individual["evaluation"]
    if evaluation.get("devices", "auto") != "auto" or evaluation.get("mode") not in (None, "train", "simulated"):
        return 0, True
    rule, model = ProbeRule(), allocation_state.load_model(individual["search"])
    if not rule.wanted(model, sizes):
        return 0, True
    asked, wide = _wide(individual, sizes, book, host, model, rule)
    if wide > 1 or asked > 1:
        return wide, True
    timed_on = _length_gang(individual, sizes, book, host)
    return (timed_on, timed_on <= 1) if timed_on <= len(book.free()) else (1, True)


def probe_inside(individual: dict[str, Any], sizes: tuple[int, ...], book: Ledger, host: str,
                 evaluate: Callable[..., EvaluationResult], gang: int = 1, apart: bool = True
                 ) -> EvaluationResult | tuple[float | None, bool]:
    """The evaluation on ``gang`` free devices, whose first steps are the probe (``evaluate(devices, on_probe)``;
    on a gang, its one-device part runs first, apart, on the first of them: the efficiency is the ratio of the two
    rates; not ``apart``: the gang's rate alone times the length, through the efficiency the model expects,
    ``single_from_gang``): at the probe's point the allocator decides with the candidate's measured length; the
    same gang here goes on training (the result, ``allocation_continued``), any other choice ends it there
    (``declined``) and returns what the probe measured, ``(seconds on one device or None, True)``, for the caller
    to place it as decided. No free devices: ``(None, False)``. A failure before the decision is the probe's, never the
    candidate's: ``(seconds on one device or None, True)``, and the caller decides with what was measured."""
    search_id, number = individual["search"], individual["individual"]
    held = book.claim(gang)
    if held is None:
        return None, False
    state: dict[str, Any] = {"choice": None, "known": None, "token": None, "observed": None, "single": None}
    if gang > 1 and apart:
        answer = rate_probe.measure(individual, [[book.devices[held[0]]]])
        if answer is None:
            book.release(held)
            return None, True
        state["single"] = float(answer["rates"][1])
        state["known"] = single_seconds(answer["rates"], answer["steps"])
        allocation_state.record_probed(search_id, number, state["known"])

    def on_probe(rate: float | None, steps: float) -> bool:
        if state["choice"] is not None:  # an attempt run again (a rank lost): as decided the first time
            return state["token"] is not None
        try:
            rates = {1: state["single"]} if gang > 1 and apart else {}
            if rate:
                rates[gang] = float(rate)
            if 1 in rates:
                state["known"] = float(steps) / rates[1]
                allocation_state.record_rates(search_id, host, rates)
            elif rates:  # its length timed on the gang alone
                model = allocation_state.load_model(search_id)
                state["known"] = single_from_gang(model, host, gang, rates[gang], steps)
            if rates:
                allocation_state.record_probed(search_id, number, state["known"])
            choice = choose(individual, sizes, book, host, state["known"], holding=gang)
        except Exception as error:  # the decision failed: the candidate goes on where it is, never fails for it
            log.warning("individual %s: decision at its probe failed: %s", number, error)
            choice = Allocation(host, gang, f"gang of {gang}: the decision at its probe failed ({error}); it trains "
                                "on where it was probed", "plan")
        state["choice"] = choice
        if choice.host != host or choice.gang != gang:
            return False
        state["token"], state["observed"] = _started(individual, book, host, held, state["known"])
        return True

    started = time.perf_counter()
    try:
        result = evaluate([book.devices[index] for index in held], on_probe)
    finally:
        book.release(held)
        if state["token"] is not None:
            cluster_state.remove_run(host, state["token"])
    if state["token"] is not None:
        log.info("individual %s: trained on from its probe (~%s s on one device)", number, state["known"])
        return _recorded(individual, result, book, host, held, state["choice"], state["known"],
                         time.perf_counter() - started, state["observed"], continued=True)
    if state["choice"] is not None and state["choice"].rule == "handback":
        hand_back_now(individual, state["choice"])  # its probe's decision handed it back: at once, not decided again
    if state["choice"] is None:
        log.warning("individual %s: its evaluation ended before its probe's decision (%s %s); decided with what "
                    "was measured", number, result.failure, result.message)
    else:
        log.info("individual %s: its probe (~%s s on one device) leads to a gang of %s: placed as decided", number,
                 state["known"], state["choice"].gang)
    return state["known"], True
