"""A discrete-event simulation of one search on a cluster of simulated devices: the real strategies
(``nas.strategies``), the real decision (``nas.allocation.decide``, from host records exactly as gang workers
publish them) and the simulated evaluator's durations (``evaluators.simulated.draw_duration``,
``T(g) = T(1) / (g x efficiency(g))``), with no processes and no sleep.

It does what the control loop and the workers do: ask the strategy for candidates (a barrier strategy for its whole
open generation, a steady-state one for as many as devices could start), place each with the decision the worker
makes (the search's throughput model, every host's published record: devices, gang sizes, what runs there, when it
started and how long it was expected to take, and the pending work the loop publishes), and tell the strategy each
result when its evaluation ends. Used by ``benchmarks/allocation.py`` and its test.
"""
from __future__ import annotations

import collections
import dataclasses
import hashlib
import heapq
from collections.abc import Callable
from typing import Any

from evaluators.simulated import draw_duration
from nas.allocation import Allocation, Pending, ThroughputModel, decide, gang_duration, gang_sizes
from nas.allocation import hand_back, length_gang, reserved, room, running_entry
from benchmarks.allocation_oracle import Truth
from benchmarks.allocation_scenarios import (CLUSTERS, RHOS, SIGMAS, Cluster, Scenario,  # noqa: F401
                                             grid_scenario, per_added_device)
from benchmarks.allocation_sim_probe import (Probe, _probe_lost, _probe_on_gang, _probe_single,  # noqa: F401
                                             _probe_wide, _wide_part)
from nas.spaces import get_space
from nas.strategies import Result, get_strategy
from nas.strategies.barrier import GenerationalStrategy

SEARCH = 1  #: the simulated search's id in the host records

#: A decision: (model, host records, pending work, now, the host that pulled, exact free devices) -> Allocation.
Policy = Callable[[ThroughputModel, list, Pending, float, str, dict], Allocation]


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where one candidate ran: its draw, the host whose worker pulled it, the host and gang it ran on, when it
    was pulled and when it started (after its probe, if any, which the start charges)."""

    draw: int
    pulled_by: str
    host: str
    gang: int
    pulled: float
    started: float


@dataclasses.dataclass
class Outcome:
    """What one simulated search measured."""

    makespan: float = 0.0
    busy: float = 0.0  #: device-seconds spent evaluating
    serial: float = 0.0  #: the same evaluations' seconds on one device each, one after the other
    evaluations: int = 0
    gangs: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    reasons: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    held: int = 0  #: candidates a worker kept while told to wait (``pull="worker"``)
    handed: int = 0  #: candidates a worker handed back to the queue (``pull="handback"``)
    placements: list = dataclasses.field(default_factory=list)  #: a :class:`Placement` per evaluation, in order

    def utilisation(self, devices: int) -> float:
        return self.busy / (devices * self.makespan) if self.makespan else 0.0

    def speedup(self) -> float:
        return self.serial / self.makespan if self.makespan else 0.0


def _fitness(key: str) -> float:
    digest = hashlib.sha256(f"fitness:{key}".encode()).digest()
    return 0.5 + 0.49 * int.from_bytes(digest[:8], "big") / 2**64


def plan_policy(model: ThroughputModel, records: list, pending: Pending, now: float, here: str,
                free: dict) -> Allocation:
    """``auto``: the expected-makespan planner, exactly as the worker calls it."""
    return decide(model, records, pending, now, here, free, search=SEARCH)


#: How a pulled candidate meets a worker told to wait (``simulate_search``'s ``pull``).
PULLS = ("host", "worker", "handback")


def simulate_search(scenario: Scenario, devices: int | Cluster, gang: int | str, seed: int = 0,
                    prior_duration: float = 60.0, policy: Policy | None = None,
                    prior: dict[str, Any] | None = None, probe: Probe | None = None,
                    truth: Truth | None = None, pull: str = "host") -> Outcome:
    """Run ``scenario`` on ``devices`` (one host of that many, or a :class:`Cluster`) split into fixed gangs of
    ``gang`` or ``"auto"`` (decided by ``policy``, the planner by default); ``prior``: other arguments of the
    search's ``ThroughputModel`` (``prior_spread``, ``prior_efficiency``); ``probe``: a scaling probe before each
    ``auto`` decision (:class:`Probe`; ``None``: none); ``truth``: what the decision is told instead of learning it
    (``benchmarks.allocation_oracle.Truth``; ``None``: nothing, as the worker).

    ``pull``: who gets a candidate whose worker is told to wait. ``"host"`` (the tables so far): the next candidate
    is offered to the hosts with free devices, the most first, and one told to wait is offered to the next such
    host. ``"worker"`` (the gang worker before its room rule and hand-back): each host's worker has
    one pool process per smallest gang (``devices // min(sizes)``, as ``evalworker --gang`` starts it), each holds
    one candidate at a time, running or waiting; a worker with a process holding none pulls the next candidate
    whatever its free devices (even none), the one that has waited longest first (Celery's workers block on the
    queue's Redis list, ``BRPOP``, which serves the longest-blocked first; a worker asks again, at the back, as soon
    as it has a free process), decides for its own host, and, told to wait, keeps the candidate (holding no
    device) and decides again for that host whenever anything changes (the real one every 0.2 s), while its other
    processes and the other workers pull the next candidates.
    ``"handback"`` (the real gang worker, ``webapp.worker.device_claims.run_on_gang``): as ``"worker"``, except that
    a worker pulls only while its host has room (``nas.allocation.room``, ``webapp.worker.gang_tap``: free devices
    for a smallest gang beyond those its held candidates need; the real one recomputes it every second, here at each
    pull), and that one told to wait hands the candidate back where ``nas.allocation.hand_back`` says so (from the
    same host records: another host's worker has a free process and room, and the planner would start it there
    now), to the front of the queue (the loop re-sends it with the first priority), at most ``handing_back.LIMIT``
    times per candidate; a candidate held while told to wait keeps the devices of the gang it waits for
    (``nas.allocation.reserved``: its worker pulls nothing that would take them). Its scaling probe is the real
    worker's too: only the candidate a worker pulled is probed, on a free device of that host (the other modes probe
    a waiting candidate per free device at once, lengths the real worker does not have), and a probe that does not
    start its candidate at once holds that one device for its seconds then (the others charge it to the gang
    when the candidate starts). The n-th candidate asked takes the n-th draw in every mode."""
    if pull not in PULLS:
        raise ValueError(f"`pull` must be one of {', '.join(PULLS)} (got {pull!r})")
    cluster = devices if isinstance(devices, Cluster) else Cluster(1, devices)
    policy = policy or plan_policy
    space = get_space("pelee")
    strategy = get_strategy(scenario.strategy, space, seed=seed, **scenario.params)
    barrier = isinstance(strategy, GenerationalStrategy)
    sizes = gang_sizes(cluster.devices, gang)
    model = (truth.model(scenario, prior_duration=prior_duration, **(prior or {})) if truth is not None
             else ThroughputModel(prior_duration=prior_duration, **(prior or {})))
    told = truth is not None and truth.durations  # every asked candidate's own length, no probe
    config = {"duration": scenario.duration, "distribution": "lognormal", "sigma": scenario.sigma}
    outcome = Outcome()
    records = {name: {"host": name, "devices": cluster.devices, "sizes": list(sizes), "running": [], "waiting": []}
               for name in cluster.names()}
    free = {name: cluster.devices for name in records}
    slots = cluster.devices // min(sizes)  # pull="worker": a host's pool processes, one candidate each
    hosted: collections.Counter = collections.Counter()  # pull="worker": candidates a host's processes hold
    held: list[tuple[str, Any, int, float, dict]] = []  # pull="worker": (host, candidate, draw, pulled at, its
    # published waiting entry) told to wait
    handed: collections.Counter = collections.Counter()  # pull="handback": draw index -> times handed back
    line = collections.deque(records)  # pull="worker": the workers with a free process, waiting for a message
    now, asked, sequence = 0.0, 0, 0
    waiting: collections.deque = collections.deque()  # (candidate, draw index) asked and not pulled, in order
    wides: dict[int, tuple] = {}  # draw index -> its wide probe: (draw index, its wall seconds, its gang, host)
    singles: dict[int, tuple[float, float]] = {}  # draw index -> (one-device seconds measured, probe wall seconds)
    running: list[tuple[float, int, Any, int, str, dict]] = []  # (end, seq, candidate, gang, host, record entry)

    def stored() -> ThroughputModel:
        """The search's model as a worker loads it for a decision (``allocation_state.load_model``): what was
        observed, without the running and probed candidates an earlier decision added to it."""
        model.running(())
        model.probed(())
        return model

    def decision(index: int, others: list[int], here: str | None) -> tuple[Allocation, float | None, Pending]:
        """The decision for the candidate of draw ``index`` (``others``: the draws of those not started behind it)
        by the worker of ``here`` (``None``: each host with free devices in turn, the most first, until one places
        it), after its probe where one is wanted; with its one-device seconds as the decision knew them and the
        pending work it saw."""
        more = 0 if barrier else (None if (planned := strategy.planned()) is None else max(0, planned - asked))
        known, probes = None, ()
        if told:
            known = draw_duration(config, f"{scenario.name}:{seed}:{index}")
            probes = tuple(draw_duration(config, f"{scenario.name}:{seed}:{k}") for k in others)
        probing = probe is not None and probe.rule.wanted(stored(), sizes)
        prober = here if here is not None else min(free, key=lambda n: (-free[n], n))
        rule, wide = _wide_part(probe, stored(), list(records.values()), Pending(1 + len(others), more), now, prober,
                                dict(free), sizes, SEARCH) if probing and index not in wides else (1, 1)
        if probing and pull == "handback" and index not in singles and rule == 1:
            # the real worker times a length only where it could change the placement (decided again later), with
            # the pending work it reads for an unprobed candidate (``read_pending``: no probes), on the gang it would
            # get where a long one would too; while the search lacks its efficiency probes, every one
            timed_on = length_gang(stored(), list(records.values()), Pending(1 + len(others), more), now, here,
                                   dict(free), SEARCH)
            probing, key = 0 < timed_on, f"{scenario.name}:{seed}:{index}"
            if probing and 1 < timed_on <= free[here] and probe.lengths_on_gang:  # no one-device part, no efficiency
                singles[index], wides[index] = _probe_on_gang(probe, stored(), draw_duration(config, key),
                                                              scenario.efficiency, here, timed_on, index, key)
                probing = False
        if probing and pull == "handback" and index not in singles and free[here] < 1:
            probing = False  # the real worker probes on a free device of its host; none: decided again later
        if probing or index in singles:
            # every free device probes one waiting candidate on its own (their lengths, before any is placed);
            # the worker that pulls the first also probes it on the widest gang its free devices allow; the real
            # worker (``handback``) probes the candidate it pulled, the others when their workers pull them
            batch = 1 if pull == "handback" else min(1 + len(others), max(1, sum(free.values())))
            for ahead in [index, *others][:batch * probing]:
                if ahead not in singles:
                    key = f"{scenario.name}:{seed}:{ahead}"
                    singles[ahead] = _probe_single(probe, draw_duration(config, key), key)
            if index not in wides and probing:
                single = draw_duration(config, f"{scenario.name}:{seed}:{index}")
                wides[index] = (index, *_probe_wide(probe, stored(), single, singles[index][0], scenario.efficiency,
                                                    prober, wide, f"{scenario.name}:{seed}:{index}"), prober)
            known = singles[index][0]
            probes = tuple(singles[k][0] for k in others if k in singles)
        pending = Pending(1 + len(others), more, known=known, probes=probes)
        choice = Allocation(None, min(sizes), "no host with free devices", "wait")
        for host in ([here] if here is not None else
                     sorted((n for n in free if free[n] >= min(sizes)), key=lambda n: (-free[n], n))):
            if len(sizes) == 1:
                choice = _fixed({host: free[host]}, sizes[0])
            else:
                choice = policy(stored(), list(records.values()), pending, now, host, dict(free))
            if choice.host is not None:
                break
        return choice, known, pending

    def handing_back(index: int, here: str, choice: Allocation, pending: Pending) -> Allocation:
        """``choice``, or, where it says wait and the real worker would hand the candidate back, that."""
        if pull != "handback" or choice.host is not None or len(sizes) == 1:
            return choice
        return hand_back(stored(), list(records.values()), pending, now, here, {here: free[here]}, SEARCH,
                         handed[index]) or choice

    def paid(index: int, here: str) -> None:
        """A candidate the worker of ``here`` just probed on one device and did not start: the probe held that device
        for its wall seconds now (``handback``: the real worker's probe runs on one free device, then the candidate
        waits or goes back to the queue); its start later costs nothing more."""
        nonlocal sequence
        if pull != "handback" or index not in singles or wides.get(index, (index, 0.0, 1))[2] != 1:
            return
        measured, wall = singles[index]
        if wall <= 0 or free[here] < 1:
            return
        heapq.heappush(running, (now + wall, sequence, None, 1, here, None))
        sequence += 1
        free[here] -= 1
        outcome.busy += wall
        singles[index] = (measured, 0.0)

    def give_back(candidate: Any, index: int, here: str) -> None:
        """The worker of ``here`` hands the candidate back: to the front of the queue (the loop re-sends it with the
        first priority); its process is free."""
        handed[index] += 1
        outcome.handed += 1
        waiting.appendleft((candidate, index))
        hosted[here] -= 1
        if here not in line:
            line.append(here)

    def start(candidate: Any, index: int, choice: Allocation, known: float | None, pulled_by: str,
              pulled_at: float) -> None:
        nonlocal sequence
        # the n-th candidate of a search takes the n-th draw, whichever split runs it: splits are compared on
        # the same durations (a steady-state search asks different candidates under different splits, and one
        # very long candidate in one of them would otherwise decide the comparison)
        single = draw_duration(config, f"{scenario.name}:{seed}:{index}")
        seconds = gang_duration(single, choice.gang, scenario.efficiency)
        wide = wides.pop(index, (index, 0.0, 1, None))  # this candidate's wide probe, if any
        wall = _probe_lost(probe, singles.pop(index)[1], wide, choice) if index in singles else 0.0
        entry = running_entry(SEARCH, choice.gang, now + wall, stored(), choice.host, known)
        if told:
            entry = truth.exact(entry)
        records[choice.host]["running"].append(entry)
        heapq.heappush(running, (now + wall + seconds, sequence, candidate, choice.gang, choice.host, entry))
        sequence += 1
        free[choice.host] -= choice.gang
        outcome.busy += choice.gang * (wall + seconds)
        extra = wide[2] - choice.gang if known is not None and wide[3] == choice.host else 0
        if extra > 0:  # the probe's wider gang holds its other devices until the probe is done
            heapq.heappush(running, (now + wall, sequence, None, extra, choice.host, None))
            sequence += 1
            free[choice.host] -= extra
            outcome.busy += extra * wall
        outcome.serial += single
        outcome.evaluations += 1
        outcome.gangs[choice.gang] += 1
        outcome.reasons[choice.rule] += 1
        outcome.placements.append(Placement(index, pulled_by, choice.host, choice.gang, pulled_at, now))

    while True:
        if barrier:
            fresh = strategy.ask(10**6)  # the whole open generation: the allocator sees the tail coming
        elif pull != "host":  # as many as there are pool processes holding none
            fresh = strategy.ask(max(0, slots * cluster.hosts - sum(hosted.values()) - len(waiting)))
        else:
            fresh = strategy.ask(max(0, sum(free.values()) // min(sizes) - len(waiting)))
        waiting.extend((candidate, asked + k) for k, candidate in enumerate(fresh))
        asked += len(fresh)
        if pull != "host":
            for item in held:  # their workers decide again every 0.2 s: their entries are fresh
                item[4]["seen"] = now
            for item in list(held):  # those told to wait decide again, for their own host, in the order pulled
                host, candidate, index, pulled_at, wait = item
                others = [i for _, _, i, _, _ in held if i != index] + [i for _, i in waiting]
                choice, known, pending = decision(index, others, host)
                choice = handing_back(index, host, choice, pending)
                if choice.host != host:
                    paid(index, host)
                if choice.host is None:
                    wait["gang"] = choice.gang  # the gang it waits for now: its devices are kept for it
                    continue
                held.remove(item)
                records[host]["waiting"] = [w for w in records[host]["waiting"] if w is not wait]
                if choice.host == host:
                    start(candidate, index, choice, known, host, pulled_at)
                else:
                    give_back(candidate, index, host)
            while waiting and line:
                if pull == "handback":  # a worker pulls only while its host has room (webapp.worker.gang_tap)
                    ready = [h for h in line if room(free[h], reserved(records[h], now), min(sizes))]
                    if not ready:
                        break
                    here = ready[0]  # the one that has waited longest among them
                    line.remove(here)
                else:
                    here = line.popleft()  # the worker that has waited longest for a message gets the next one
                candidate, index = waiting.popleft()
                hosted[here] += 1
                if hosted[here] < slots:  # a process still free: it asks again, behind the others
                    line.append(here)
                others = [i for _, _, i, _, _ in held] + [i for _, i in waiting]
                choice, known, pending = decision(index, others, here)
                choice = handing_back(index, here, choice, pending)
                if choice.host != here:
                    paid(index, here)
                if choice.host is None:
                    wait = {"search": SEARCH, "since": now, "seen": now, "gang": choice.gang}
                    records[here]["waiting"].append(wait)
                    held.append((here, candidate, index, now, wait))
                    outcome.held += 1
                elif choice.host != here:
                    give_back(candidate, index, here)
                else:
                    start(candidate, index, choice, known, here, now)
        else:
            while waiting and max(free.values()) >= min(sizes):
                # the candidate is pulled by a worker with free devices (the one with the most first) and runs
                # there; a worker whose allocator says "wait" leaves it to the next one
                index = waiting[0][1]
                choice, known, _ = decision(index, [i for _, i in list(waiting)[1:]], None)
                if choice.host is None:
                    break
                start(waiting.popleft()[0], index, choice, known, choice.host, now)
        if not running:
            if waiting or held:
                raise RuntimeError(f"{scenario.name}: {len(waiting) + len(held)} candidates wait with every "
                                   "device idle")
            break
        end, _, candidate, g, host, entry = heapq.heappop(running)
        now = end
        free[host] += g
        if candidate is None:  # a probe's devices
            continue
        hosted[host] -= 1
        if host not in line:  # its worker had none free: it asks again, behind those that wait
            line.append(host)
        records[host]["running"].remove(entry)
        model.observe(host, g, end - entry["started"], since=entry.get("observed"))
        strategy.tell(candidate.id, Result(fitness=_fitness(candidate.key)))
    outcome.makespan = now
    return outcome


def _fixed(free: dict[str, int], gang: int) -> Allocation:
    """A fixed split: the gang on the host with the fewest free devices that fit it."""
    fits = [(count, name) for name, count in free.items() if count >= gang]
    return Allocation(min(fits)[1] if fits else None, gang, "fixed", "fixed" if fits else "wait")
