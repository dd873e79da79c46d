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
import math
import random
from collections.abc import Callable
from typing import Any

from evaluators.simulated import draw_duration
from nas.allocation import Allocation, Pending, ThroughputModel, decide, gang_duration, gang_sizes
from nas.allocation import ProbeRule, running_entry
from benchmarks.allocation_oracle import Truth
from nas.spaces import get_space
from nas.strategies import Result, get_strategy
from nas.strategies.barrier import GenerationalStrategy

SEARCH = 1  #: the simulated search's id in the host records

#: A decision: (model, host records, pending work, now, the host that pulled, exact free devices) -> Allocation.
Policy = Callable[[ThroughputModel, list, Pending, float, str, dict], Allocation]


@dataclasses.dataclass(frozen=True)
class Scenario:
    """A search and its candidates' cost."""

    name: str
    strategy: str
    params: dict[str, Any]
    duration: float  #: median seconds of one evaluation on one device
    sigma: float  #: lognormal shape of the durations
    efficiency: Any  #: the gang efficiency curve (``nas.allocation.efficiency``: per doubling, or a table)


def per_added_device(rho: float, largest: int = 64) -> dict[str, float]:
    """The efficiency table of candidates that keep ``rho`` per device added to the gang: ``rho ** (g - 1)``."""
    return {str(g): rho ** (g - 1) for g in range(2, largest + 1)}


@dataclasses.dataclass(frozen=True)
class Cluster:
    """``hosts`` hosts of ``devices`` devices each."""

    hosts: int
    devices: int

    @property
    def total(self) -> int:
        return self.hosts * self.devices

    def names(self) -> list[str]:
        return [f"host{index}" for index in range(self.hosts)]


#: The benchmark's grid (``benchmarks/allocation.py``; the DQN trains on it too).
CLUSTERS = {"4 on 1 host": Cluster(1, 4), "16 on 4 hosts": Cluster(4, 4), "64 on 16 hosts": Cluster(16, 4)}
SIGMAS = (0.3, 0.6, 1.0)
RHOS = (0.6, 0.8, 0.9, 0.97)


def grid_scenario(strategy: str, sigma: float, rho: float, population: int = 24, generations: int = 5,
                  evaluations: int = 120, duration: float = 300.0) -> Scenario:
    """One scenario of the grid: a generational or regularized search of candidates spread by ``sigma`` that keep
    ``rho`` per device added to their gang."""
    params = ({"population": population, "generations": generations} if strategy == "generational"
              else {"population": population, "sample_size": 5, "max_evaluations": evaluations})
    return Scenario(f"{strategy}, sigma {sigma:g}, rho {rho:g}", strategy, params, duration, sigma,
                    per_added_device(rho))


@dataclasses.dataclass
class Outcome:
    """What one simulated search measured."""

    makespan: float = 0.0
    busy: float = 0.0  #: device-seconds spent evaluating
    serial: float = 0.0  #: the same evaluations' seconds on one device each, one after the other
    evaluations: int = 0
    gangs: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    reasons: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    def utilisation(self, devices: int) -> float:
        return self.busy / (devices * self.makespan) if self.makespan else 0.0

    def speedup(self) -> float:
        return self.serial / self.makespan if self.makespan else 0.0


@dataclasses.dataclass(frozen=True)
class Probe:
    """The scaling probe a gang worker runs on a candidate before it is placed (``auto`` only): a few training
    steps on one device, which time the candidate (its steps per second, so its seconds on one device), then, while
    the search has fewer than ``pairs`` probes of that size, on the widest gang the worker's free devices allow
    (the ratio of the two rates: the efficiency). The one-device part costs ``setup`` seconds, the gang part
    ``wide_setup`` (its rank processes start and meet), each plus ``fraction`` of the candidate's duration on that
    gang; each measured rate is off by a lognormal factor of ``noise``. The candidate starts after its probe on the
    gang chosen; the probe's other devices are held for its duration.

    ``continues``: the probe's steps are the first steps of the candidate's training, so a decision that keeps the
    configuration a part of the probe ran on goes on from that part's state: that part costs nothing (its setup is
    the evaluation's own, which no split is charged for, and its steps are done), and only the other part's time
    is lost. ``"both"``: the one-device part and the wide gang (on its host) go on; ``"one"``: only a probe without
    a wide part, on one device (what the real worker does, ``webapp.worker.device_claims.probe_inside``: a probe
    with a wide part runs apart and is paid whole); ``"none"``: every decision starts again after the whole
    probe. The charges are the real worker's, measured
    on the CPU (``benchmarks/allocation_probe_real.py``): a one-device probe 0.2-4.3 s, 13 s for a worker process's
    first (the data set loads); a probe on ``cpu,cpu`` 27-37 s, mostly starting the two ranks."""

    fraction: float = 0.01
    setup: float = 5.0
    wide_setup: float = 30.0
    noise: float = 0.05
    pairs: int = 4
    min_spread: float = 0.45  #: lengths are probed only while the measured spread of durations exceeds this (a
    #: probe is worth its time where lengths are unpredictable); the efficiency probes run until ``pairs`` regardless
    steps: float = 1000.0  #: steps of one evaluation (any number: rates are steps/s, the durations their ratio)
    continues: str = "both"

    @property
    def rule(self) -> ProbeRule:
        """When to probe and on which gang: the real worker's rule (``nas.allocation.ProbeRule``)."""
        return ProbeRule(self.pairs, self.min_spread)


def _probe_single(probe: Probe, single: float, key: str) -> tuple[float, float]:
    """The one-device part of ``probe`` on a candidate of ``single`` seconds: (the seconds it measures, its wall
    seconds)."""
    rate = probe.steps / single * math.exp(random.Random(f"probe:{key}").gauss(0.0, probe.noise))
    return probe.steps / rate, probe.setup + probe.fraction * single


def _probe_wide(probe: Probe, model: ThroughputModel, single: float, measured: float, efficiency_: Any, here: str,
                free: int, sizes: tuple[int, ...], key: str) -> tuple[float, int]:
    """The wide part of ``probe`` (while the search has fewer than ``pairs`` probes of the widest gang ``free``
    devices of ``here`` allow), fed to the model as the worker does: (its wall seconds, the gang; 0 and 1: none)."""
    wide = probe.rule.wide_gang(model, sizes, free)
    if wide == 1:
        return 0.0, 1
    seconds = gang_duration(single, wide, efficiency_)
    rate = probe.steps / seconds * math.exp(random.Random(f"probe-wide:{key}").gauss(0.0, probe.noise))
    model.observe_rates(here, {1: probe.steps / measured, wide: rate})
    return probe.wide_setup + probe.fraction * seconds, wide


def _probe_lost(probe: Probe, single_wall: float, wide: tuple, choice: Allocation) -> float:
    """The wall seconds of a candidate's probe that its evaluation does not get back (``wide``: its wide part, (index,
    wall seconds, gang, host)): with ``probe.continues``, the part whose configuration the decision keeps goes on
    training, and only the other part is lost (see :class:`Probe`)."""
    if probe.continues not in ("none", "one", "both"):
        raise ValueError(f"`continues` must be none, one or both (got {probe.continues!r})")
    if probe.continues == "both" and choice.gang == 1:  # the one-device part goes on (after the wide part, if any)
        return wide[1]
    if probe.continues == "one" and choice.gang == 1 and wide[2] == 1:  # a probe of one device only: it goes on
        return 0.0
    if probe.continues == "both" and choice.gang == wide[2] and choice.host == wide[3]:  # the probing gang goes on
        return single_wall
    return single_wall + wide[1]


def _fitness(key: str) -> float:
    digest = hashlib.sha256(f"fitness:{key}".encode()).digest()
    return 0.5 + 0.49 * int.from_bytes(digest[:8], "big") / 2**64


def plan_policy(model: ThroughputModel, records: list, pending: Pending, now: float, here: str,
                free: dict) -> Allocation:
    """``auto``: the expected-makespan planner, exactly as the worker calls it."""
    return decide(model, records, pending, now, here, free, search=SEARCH)


def simulate_search(scenario: Scenario, devices: int | Cluster, gang: int | str, seed: int = 0,
                    prior_duration: float = 60.0, policy: Policy | None = None,
                    prior: dict[str, Any] | None = None, probe: Probe | None = None,
                    truth: Truth | None = None) -> Outcome:
    """Run ``scenario`` on ``devices`` (one host of that many, or a :class:`Cluster`) split into fixed gangs of
    ``gang`` or ``"auto"`` (decided by ``policy``, the planner by default); ``prior``: other arguments of the
    search's ``ThroughputModel`` (``prior_spread``, ``prior_efficiency``); ``probe``: a scaling probe before each
    ``auto`` decision (:class:`Probe`; ``None``: none); ``truth``: what the decision is told instead of learning it
    (``benchmarks.allocation_oracle.Truth``; ``None``: nothing, as the worker)."""
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
    records = {name: {"host": name, "devices": cluster.devices, "sizes": list(sizes), "running": []}
               for name in cluster.names()}
    free = {name: cluster.devices for name in records}
    now, asked, sequence = 0.0, 0, 0
    waiting: collections.deque = collections.deque()
    probed: tuple = (-1,)  # the wide probe: (draw index, its wall seconds, its gang, host)
    singles: dict[int, tuple[float, float]] = {}  # draw index -> (one-device seconds measured, probe wall seconds)
    running: list[tuple[float, int, Any, int, str, dict]] = []  # (end, seq, candidate, gang, host, record entry)
    while True:
        if barrier:
            fresh = strategy.ask(10**6)  # the whole open generation: the allocator sees the tail coming
        else:
            fresh = strategy.ask(max(0, sum(free.values()) // min(sizes) - len(waiting)))
        asked += len(fresh)
        waiting.extend(fresh)
        while waiting and max(free.values()) >= min(sizes):
            planned = strategy.planned()
            more = 0 if barrier else (None if planned is None else max(0, planned - asked))
            index = outcome.evaluations  # the n-th candidate of a search takes the n-th draw (see below)
            single = draw_duration(config, f"{scenario.name}:{seed}:{index}")
            known, probes = None, ()
            if told:
                known = single
                probes = tuple(draw_duration(config, f"{scenario.name}:{seed}:{k}")
                               for k in range(index + 1, index + len(waiting)))
            probing = probe is not None and probe.rule.wanted(model, sizes)
            if probing or index in singles:
                # every free device probes one waiting candidate on its own (their lengths, before any is placed);
                # the worker that pulls the first also probes it on the widest gang its free devices allow
                for ahead in range(index, index + min(len(waiting), max(1, sum(free.values())) * probing)):
                    if ahead not in singles:
                        key = f"{scenario.name}:{seed}:{ahead}"
                        singles[ahead] = _probe_single(probe, draw_duration(config, key), key)
                if probed[0] != index and probing:
                    here = min(free, key=lambda n: (-free[n], n))
                    probed = (index, *_probe_wide(probe, model, single, singles[index][0], scenario.efficiency,
                                                  here, free[here], sizes, f"{scenario.name}:{seed}:{index}"), here)
                known = singles[index][0]
                probes = tuple(singles[k][0] for k in range(index + 1, index + len(waiting)) if k in singles)
            pending = Pending(len(waiting), more, known=known, probes=probes)
            # the candidate is pulled by a worker with free devices (the one with the most first) and runs there;
            # a worker whose allocator says "wait" leaves it to the next one (the real one would hold it and ask
            # again, while the other workers pull the next candidates)
            choice = None
            for here in sorted((name for name in free if free[name] >= min(sizes)), key=lambda n: (-free[n], n)):
                if len(sizes) == 1:
                    choice = _fixed({here: free[here]}, sizes[0])
                else:
                    choice = policy(model, list(records.values()), pending, now, here, dict(free))
                if choice.host is not None:
                    break
            if choice is None or choice.host is None:
                break
            candidate = waiting.popleft()
            # the n-th candidate of a search takes the n-th draw, whichever split runs it: splits are compared on
            # the same durations (a steady-state search asks different candidates under different splits, and one
            # very long candidate in one of them would otherwise decide the comparison)
            seconds = gang_duration(single, choice.gang, scenario.efficiency)
            wide = probed if probed[0] == index else (index, 0.0, 1, None)  # this candidate's wide probe, if any
            wall = _probe_lost(probe, singles.pop(index)[1], wide, choice) if index in singles else 0.0
            entry = running_entry(SEARCH, choice.gang, now + wall, model, choice.host, known)
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
        if not running:
            if waiting:
                raise RuntimeError(f"{scenario.name}: {len(waiting)} candidates wait with every device idle")
            break
        end, _, candidate, g, host, entry = heapq.heappop(running)
        now = end
        free[host] += g
        if candidate is None:  # a probe's devices
            continue
        records[host]["running"].remove(entry)
        model.observe(host, g, end - entry["started"])
        strategy.tell(candidate.id, Result(fitness=_fitness(candidate.key)))
    outcome.makespan = now
    return outcome


def _fixed(free: dict[str, int], gang: int) -> Allocation:
    """A fixed split: the gang on the host with the fewest free devices that fit it."""
    fits = [(count, name) for name, count in free.items() if count >= gang]
    return Allocation(min(fits)[1] if fits else None, gang, "fixed", "fixed" if fits else "wait")
