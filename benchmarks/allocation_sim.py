"""A discrete-event simulation of one search on a host of simulated devices: the real strategies
(``nas.strategies``), the real allocator (``nas.allocation``) and the simulated evaluator's durations
(``evaluators.simulated.draw_duration``, ``T(g) = T(1) / (g x efficiency(g))``), with no processes and no sleep.

It does what the control loop does: ask the strategy for candidates (a barrier strategy for its whole open
generation, a steady-state one for as many as devices could start), place each with the allocator, and tell
the strategy each result when its evaluation ends. Used by ``benchmarks/allocation.py`` and its test.
"""
from __future__ import annotations

import collections
import dataclasses
import hashlib
import heapq
from typing import Any

from evaluators.simulated import draw_duration
from nas.allocation import Allocator, HostState, Pending, ThroughputModel, gang_duration, gang_sizes
from nas.spaces import get_space
from nas.strategies import Result, get_strategy
from nas.strategies.barrier import GenerationalStrategy

HOST = "sim"


@dataclasses.dataclass(frozen=True)
class Scenario:
    """A search and its candidates' cost."""

    name: str
    strategy: str
    params: dict[str, Any]
    duration: float  #: median seconds of one evaluation on one device
    sigma: float  #: lognormal shape of the durations
    efficiency: float  #: efficiency kept per doubling of the gang (``nas.allocation.efficiency``)


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


def _fitness(key: str) -> float:
    digest = hashlib.sha256(f"fitness:{key}".encode()).digest()
    return 0.5 + 0.49 * int.from_bytes(digest[:8], "big") / 2**64


def simulate_search(scenario: Scenario, devices: int, gang: int | str, seed: int = 0,
                    prior_duration: float = 60.0) -> Outcome:
    """Run ``scenario`` on one host of ``devices`` devices split into fixed gangs of ``gang`` or ``"auto"``."""
    space = get_space("pelee")
    strategy = get_strategy(scenario.strategy, space, seed=seed, **scenario.params)
    barrier = isinstance(strategy, GenerationalStrategy)
    sizes = gang_sizes(devices, gang)
    allocator = Allocator(ThroughputModel(prior_duration=prior_duration))
    config = {"duration": scenario.duration, "distribution": "lognormal", "sigma": scenario.sigma}
    outcome = Outcome()
    now, free, asked, sequence = 0.0, devices, 0, 0
    waiting: collections.deque = collections.deque()
    running: list[tuple[float, int, Any, int, float, float]] = []  # (end, seq, candidate, gang, start, T(g))
    while True:
        if barrier:
            fresh = strategy.ask(10**6)  # the whole open generation: the allocator sees the tail coming
        else:
            fresh = strategy.ask(max(0, free // min(sizes) - len(waiting)))
        asked += len(fresh)
        waiting.extend(fresh)
        while waiting and free >= min(sizes):
            planned = strategy.planned()
            more = 0 if barrier else (None if planned is None else max(0, planned - asked))
            busy = tuple(end - now for end, _, _, g, _, _ in running for _ in range(g))
            choice = allocator.choose([HostState(HOST, sizes, devices, free, busy)], Pending(len(waiting), more))
            if choice.host is None:
                break
            candidate = waiting.popleft()
            single = draw_duration(config, candidate.key)
            seconds = gang_duration(single, choice.gang, scenario.efficiency)
            heapq.heappush(running, (now + seconds, sequence, candidate, choice.gang, now, seconds))
            sequence += 1
            free -= choice.gang
            outcome.busy += choice.gang * seconds
            outcome.serial += single
            outcome.evaluations += 1
            outcome.gangs[choice.gang] += 1
            outcome.reasons[choice.rule] += 1
        if not running:
            if waiting:
                raise RuntimeError(f"{scenario.name}: {len(waiting)} candidates wait with every device idle")
            break
        end, _, candidate, g, _, seconds = heapq.heappop(running)
        now = end
        free += g
        allocator.model.observe(HOST, g, seconds)
        strategy.tell(candidate.id, Result(fitness=_fitness(candidate.key)))
    outcome.makespan = now
    return outcome
