"""The allocator: how many devices the next evaluation gets, and on which host.

The rule (seed 003's resource-aware scheduler, without its DQN): while there is more work than devices, one
device per evaluation gives the most completed evaluations per device-hour (data parallelism loses a little to
the AllReduce, so ``efficiency(g) < 1``). When only a few candidates are left before the strategy's next barrier
(a generation's tail) or the search's end, devices would otherwise sit idle: then the allocator plans the
remaining work under every pair (gang of this candidate, gang of the rest), replaying the expected durations of
the :class:`~nas.allocation.model.ThroughputModel` on the hosts' devices (those busy free up when their running
evaluation is expected to end), and takes the pair that finishes soonest; within ``tolerance`` of the soonest,
the smaller gang (more evaluations per device-hour). A gang never spans hosts.

Durations vary from candidate to candidate, and a tail of many small gangs ends with its slowest member while a
big gang runs them one after another (their variations average out): so each plan is replayed over ``samples``
draws of the durations, spread as measured (``ThroughputModel.spread``), the same draws for every pair.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from nas.allocation.model import ThroughputModel


@dataclasses.dataclass(frozen=True)
class HostState:
    """One host's evaluation devices as the allocator sees them at a dispatch."""

    name: str
    sizes: tuple[int, ...]  #: the gang sizes its worker accepts (``gang_sizes``)
    devices: int  #: devices its worker owns
    free: int  #: devices idle now
    busy: tuple[float, ...] = ()  #: for each busy device, the expected seconds until it is free

    def __post_init__(self) -> None:
        if not self.sizes or min(self.sizes) < 1 or max(self.sizes) > self.devices:
            raise ValueError(f"host {self.name}: gang sizes {self.sizes} must lie in 1..{self.devices}")
        if not 0 <= self.free <= self.devices or self.free + len(self.busy) > self.devices:
            raise ValueError(f"host {self.name}: {self.free} free and {len(self.busy)} busy of {self.devices} devices")


@dataclasses.dataclass(frozen=True)
class Pending:
    """The work in sight at a dispatch."""

    waiting: int  #: candidates asked and waiting for devices, the one being placed included (at least 1)
    more: int | None = None  #: candidates the strategy can still give before its next barrier or its end;
    #: ``None``: no limit known (a steady-state search without a budget)

    @property
    def total(self) -> int | None:
        return None if self.more is None else self.waiting + self.more


@dataclasses.dataclass(frozen=True)
class Allocation:
    """The choice for one candidate: a gang of ``gang`` devices on ``host`` (``None``: wait for devices)."""

    host: str | None
    gang: int
    reason: str
    rule: str  #: ``fixed``, ``throughput``, ``tail`` or ``wait``

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Allocator:
    """Chooses gang sizes per dispatch; see the module's docstring.

    Args:
        model: the measured throughput per (host, gang size).
        tolerance: a plan within this fraction of the soonest finish counts as as good (favours small gangs).
        plan_limit: work of more than ``plan_limit`` x the devices is "many candidates": one device each.
        samples: draws of the durations each plan is replayed over (1: the expected durations only).
        seed: the seed of those draws.
    """

    def __init__(self, model: ThroughputModel, tolerance: float = 0.03, plan_limit: int = 4, samples: int = 12,
                 seed: int = 0) -> None:
        if not 0 <= tolerance < 1:
            raise ValueError(f"`tolerance` must be in [0, 1) (got {tolerance!r})")
        if plan_limit < 1:
            raise ValueError(f"`plan_limit` must be at least 1 (got {plan_limit!r})")
        self.model = model
        self.tolerance = tolerance
        self.plan_limit = plan_limit
        if samples < 1:
            raise ValueError(f"`samples` must be at least 1 (got {samples!r})")
        self.samples = samples
        self._rng = np.random.default_rng(seed)

    def choose(self, hosts: Sequence[HostState], pending: Pending) -> Allocation:
        """The gang for the next waiting candidate, or a wait (``host`` None) when it should wait for devices."""
        if pending.waiting < 1:
            raise ValueError(f"`waiting` must be at least 1 (got {pending.waiting})")
        sizes = sorted({size for host in hosts for size in host.sizes})
        if not sizes:
            return Allocation(None, 0, "no evaluation devices", "wait")
        devices = sum(host.devices for host in hosts)
        if len(sizes) == 1:
            gang = sizes[0]
            host = self._place(hosts, gang)
            return Allocation(host, gang, f"fixed gang of {gang} device{'s' * (gang > 1)}: the workers allow no other",
                              "fixed" if host else "wait")
        total = pending.total
        if total is None or total > self.plan_limit * devices:
            return self._throughput(hosts, sizes, pending, devices)
        return self._tail(hosts, sizes, total, devices)

    def _throughput(self, hosts: Sequence[HostState], sizes: list[int], pending: Pending, devices: int) -> Allocation:
        fitting = [s for s in sizes if self._place(hosts, s)]
        if not fitting:
            return Allocation(None, 0, "no gang fits the free devices", "wait")
        rates = {s: max(self.model.per_device_hour(h.name, s) for h in hosts if s in h.sizes) for s in fitting}
        best = max(rates.values())
        gang = min(s for s in fitting if rates[s] >= best * (1 - self.tolerance))
        work = "no end in sight" if pending.total is None else f"{pending.total} candidates to go"
        others = ", ".join(f"{rates[s]:.3g} at {s}" for s in fitting if s != gang)
        reason = (f"throughput: {work} on {devices} devices; {gang} device{'s' * (gang > 1)} each gives the most "
                  f"evaluations per device-hour ({rates[gang]:.3g}/h{'; ' + others if others else ''})")
        return Allocation(self._place(hosts, gang), gang, reason, "throughput")

    def _tail(self, hosts: Sequence[HostState], sizes: list[int], total: int, devices: int) -> Allocation:
        spread = self.model.spread()
        draws = [np.ones(total)] if spread == 0 or self.samples == 1 else [
            np.exp(self._rng.normal(-spread**2 / 2, spread, total)) for _ in range(self.samples)]
        durations = {(h.name, s): self.model.duration(h.name, s) for h in hosts for s in h.sizes}
        plans = {}
        for first in sizes:
            for rest in sizes:
                if total == 1 and rest != sizes[0]:
                    continue
                finishes = [self._finish(hosts, durations, first, rest, factors) for factors in draws]
                if finishes[0] is not None:
                    plans[(first, rest)] = float(np.mean(finishes))
        if not plans:
            return Allocation(None, 0, "no gang fits the hosts", "wait")
        soonest = min(plans.values())
        good = [pair for pair, finish in plans.items() if finish <= soonest * (1 + self.tolerance)]
        now = [pair for pair in good if self._place(hosts, pair[0])]
        first, rest = min(now or good)
        host = self._place(hosts, first)
        single = plans.get((1, 1))
        compare = (f" instead of ~{single:.3g} s at 1 device each"
                   if single is not None and (first, rest) != (1, 1) else "")
        what = f"{total} candidate{'s' * (total > 1)} left before the barrier or the end, {devices} devices"
        if host is None:
            reason = (f"wait: {what}; a gang of {first} (the rest {rest} each) is expected to finish them "
                      f"in ~{plans[(first, rest)]:.3g} s{compare}")
            return Allocation(None, first, reason, "wait")
        reason = (f"tail: {what}; {first} device{'s' * (first > 1)} for this one (the rest {rest} each) is expected "
                  f"to finish them in ~{plans[(first, rest)]:.3g} s{compare}")
        return Allocation(host, first, reason, "tail" if (first, rest) != (1, 1) else "throughput")

    @staticmethod
    def _place(hosts: Sequence[HostState], gang: int) -> str | None:
        """The host that takes a gang of ``gang`` now: the one with the fewest free devices that still fit it
        (big blocks stay free for big gangs); ``None`` if none has room."""
        fits = [host for host in hosts if gang in host.sizes and host.free >= gang]
        return min(fits, key=lambda host: (host.free, host.name)).name if fits else None

    @staticmethod
    def _finish(hosts: Sequence[HostState], durations: dict[tuple[str, int], float], first: int, rest: int,
                factors: np.ndarray) -> float | None:
        """When ``len(factors)`` candidates (the first on ``first`` devices, the others on ``rest``, each taking
        its factor times the expected duration) would all be done, placed in order, each at the earliest time a
        host has the devices; ``None`` if a size fits no host."""
        free_at = {h.name: sorted([0.0] * h.free + list(h.busy) + [0.0] * (h.devices - h.free - len(h.busy)))
                   for h in hosts}
        finish = max((t for times in free_at.values() for t in times), default=0.0)
        last_start = 0.0
        for index, factor in enumerate(factors):
            gang = first if index == 0 else rest
            options = []
            for host in hosts:
                if gang in host.sizes:
                    start = max(free_at[host.name][gang - 1], last_start)
                    options.append((start + factor * durations[(host.name, gang)], start, host.name))
            if not options:
                return None
            end, start, name = min(options)
            times = free_at[name]
            times[:gang] = [end] * gang
            times.sort()
            last_start = start
            finish = max(finish, end)
        return finish
