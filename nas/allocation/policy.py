"""The allocator: how many devices the next evaluation gets, and on which host.

The rule: **the plan whose remaining work is expected to end soonest.** At every dispatch the allocator looks at
the work left before the search's next barrier or its end (``Pending``), every host's free devices and, for its busy
ones, the expected time left of what they run (``HostState``), and the search's own measurements
(:class:`~nas.allocation.model.ThroughputModel`: the typical duration, its spread from candidate to candidate and
the efficiency of each gang size, with a prior until there are data). It then plays out every plan "a gang of
``first`` for this candidate, gangs of ``rest`` for every one after it" (each gang size the workers allow, for
both), placing candidates in turn on the devices that free up first, over the same ``samples`` draws of the
durations for every plan (lognormal with the measured spread; each gang size's efficiency drawn as uncertain as
the model still is about it), and takes, among the uniform plans (``first == rest``: a fixed split from here on;
mixed ones only for the last candidate, or with ``uniform=False``), the one with the soonest expected end; within
``tolerance`` of it, one whose gang fits now, then the smaller gang (more evaluations per device-hour), but the wider
where the work left fits the free devices (what it leaves would idle until the barrier or the end); the split
most of the search's running evaluations have is kept while it is expected to end within ``keep`` of the soonest
(a change of split costs more than the plans see). A mixed
plan "1 now, 4 for the rest" taken at every dispatch fills each device as it frees and never runs the rest on 4.
The search's running evaluations enter the model as censored durations (``ThroughputModel.running``).

A **scaling probe** (``Pending.known``, ``Pending.probes``; ``ThroughputModel.observe_rates``): a worker that timed
the candidate's training steps on one device (and on a wider gang) knows its length before placing it. The plans
then play this candidate at its own length and the probed waiting ones at theirs (the others drawn as before); the
rest keep the best fixed split from here, and this one takes the gang that ends that plan soonest: a long one a
wide gang, a short one a single device.

Why it is right across the range: the plans include "every candidate on ``g`` devices" for every size, so the
choice is never expected to end later than the best fixed split would from here (a rollout of the fixed splits),
and deciding again at every dispatch corrects course as durations are measured. Many candidates per device: one
device each (the best throughput) wins; a large spread or few candidates: the longest candidates set the end, and
gangs that shorten them win; a gang never spans hosts. A search without a known end plans ``horizon`` x devices
candidates ahead. Each decision's reason is one sentence naming its plan, its expected end and the best other one.
"""
from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from nas.allocation.drawing import unsure, water_fill
from nas.allocation.model import SCALES_BADLY, SCALES_WELL, ThroughputModel


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
    running: tuple[int, ...] = ()  #: the gang sizes of this search's evaluations running now
    known: float | None = None  #: the placed candidate's seconds on one device of the host that holds it, as its
    #: scaling probe measured them (``None``: not probed; it is then drawn like the others)
    probes: tuple[float, ...] = ()  #: the same for the candidates waiting after it, in their order (those probed)

    @property
    def total(self) -> int | None:
        return None if self.more is None else self.waiting + self.more


@dataclasses.dataclass(frozen=True)
class Allocation:
    """The choice for one candidate: a gang of ``gang`` devices on ``host`` (``None``: wait for devices)."""

    host: str | None
    gang: int
    reason: str
    rule: str  #: ``fixed``, ``plan``, ``probe`` or ``wait``
    finish: float | None = None  #: seconds from now until the chosen plan's work is expected to be done
    rest: int | None = None  #: the gang size the plan gives the candidates after this one

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' * (count != 1)}"


class Allocator:
    """Chooses gang sizes per dispatch; see the module's docstring.

    Args:
        model: the measured throughput per (host, gang size).
        tolerance: a plan within this fraction of the soonest end counts as as good (favours gangs that fit now,
            then small gangs).
        samples: draws of the durations each plan is played out over.
        seed: the seed of those draws.
        horizon: a search without a known end plans this many candidates per device ahead.
        explicit: candidates per gang slot played out one by one at the end of a plan; the ones before them are
            spread evenly over the slots (their order hardly matters to the end).
        probe: a gang size measured fewer times than this is tried when that costs at most ``probe_cost`` of the
            expected end (the model learns a size's efficiency only by comparing it with another), and where its
            scaling could give a candidate a gang (``_scaling_matters``).
        uniform: only plans that give this candidate the gang of the ones after it (the fixed splits from here);
            ``False``: also "g for this one, r for the rest".
        keep: the split most of the search's running evaluations have is kept while expected to end within this
            fraction of the soonest plan (not for a probed candidate, whose own gang follows its length, nor the last
            candidate): a change of split costs more than the plans see (hosts drain to the new size while the
            workers' pulls refill them; an efficiency measured a few percent off). Simulated
            (``benchmarks/allocation.py``, with the held candidates' devices kept and before leave-one-out): 0.05
            took the grid from 65 to 70 of 72 scenarios within 5% of the best fixed split.
    """

    def __init__(self, model: ThroughputModel, tolerance: float = 0.01, samples: int = 32, seed: int = 0,
                 horizon: int = 8, explicit: int = 8, probe: int = 2, probe_cost: float = 0.1,
                 uniform: bool = True, keep: float = 0.05, **_ignored: Any) -> None:
        if not 0 <= tolerance < 1:
            raise ValueError(f"`tolerance` must be in [0, 1) (got {tolerance!r})")
        if not 0 <= keep < 1:
            raise ValueError(f"`keep` must be in [0, 1) (got {keep!r})")
        if samples < 1:
            raise ValueError(f"`samples` must be at least 1 (got {samples!r})")
        if horizon < 1 or explicit < 1:
            raise ValueError(f"`horizon` and `explicit` must be at least 1 (got {horizon!r}, {explicit!r})")
        self.model = model
        self.tolerance = tolerance
        self.samples = samples
        self.horizon = horizon
        self.explicit = explicit
        self.seed = seed
        self.probe = probe
        self.probe_cost = probe_cost
        self.uniform = uniform
        self.keep = keep

    def choose(self, hosts: Sequence[HostState], pending: Pending, here: str | None = None) -> Allocation:
        """The gang for the next waiting candidate, or a wait (``host`` None) when it should wait for devices.
        ``here``: the host whose worker holds the candidate (it can only run there); ``None``: any host."""
        if here is not None and all(host.name != here for host in hosts):
            raise ValueError(f"host {here!r} is not among the hosts given")
        self._here = here
        self._running = tuple(pending.running)
        self._known = pending.known
        self._probes = tuple(pending.probes)
        if pending.waiting < 1:
            raise ValueError(f"`waiting` must be at least 1 (got {pending.waiting})")
        sizes = sorted({size for host in hosts for size in host.sizes})
        if not sizes:
            return Allocation(None, 0, "no evaluation devices", "wait")
        if len(sizes) == 1:
            gang = sizes[0]
            host = self._place(hosts, gang)
            return Allocation(host, gang, f"fixed gang of {_plural(gang, 'device')}: the workers allow no other",
                              "fixed" if host else "wait")
        devices = sum(host.devices for host in hosts)
        total = pending.total
        work = total if total is not None else max(pending.waiting, self.horizon * devices)
        plans = self.plans(hosts, sizes, work)
        if not plans:
            return Allocation(None, 0, "no gang fits the hosts", "wait")
        # the candidates: "gangs of g for this one and every one after it" (a fixed split from here on): a plan
        # "1 now, 4 for the rest" taken at every dispatch fills each device as it frees and never runs the rest on
        # 4, so it would be judged by a future it never gets; a mixed plan is taken only for the last candidate
        choices = {pair: end for pair, end in plans.items() if pair[0] == pair[1] or work == 1 or not self.uniform}
        if not choices:
            choices = plans
        self._switch = None
        if pending.known is None and work > 1:  # the last candidate has no split to keep
            choices = self._kept(choices)
        if pending.known is not None and self.uniform:
            # a probed candidate's length is known, the others' are not: the rest keep the best fixed split from
            # here (this one included), and this one takes the gang that ends the plan soonest given its length
            rest = self._pick(hosts, choices, work)[1]
            choices = {pair: end for pair, end in plans.items() if pair[1] == rest}
        soonest = min(choices.values())
        first, rest = self._pick(hosts, choices, work)
        end = plans[(first, rest)]
        host = self._place(hosts, first)
        # a probed candidate's efficiency was measured by the probes: no evaluation is spent on measuring a size
        probe = self._probe(hosts, pending, plans, soonest, first) if work > 1 and pending.known is None else None
        if probe is not None:
            (first, rest), end = probe, plans[probe]
            host = self._place(hosts, first)
            reason = (f"probe gang of {first}: fewer than {self.probe} evaluations measured on {first} device"
                      f"{'s' * (first > 1)}; measuring it costs an expected ~{end - soonest:,.0f} s on the "
                      f"remaining {_plural(work, 'candidate')} (~{end:,.0f} s against ~{soonest:,.0f} s)")
            return Allocation(host, first, reason, "probe", round(end, 1), rest)
        others = [(value, pair) for pair, value in choices.items() if pair[0] != first]
        against = ""
        if others:
            value, (o_first, o_rest) = min(others)
            against = (f" against ~{value:,.0f} s with {o_first} for this one"
                       + (f" and {o_rest} each after it" if work > 1 else ""))
        if self._switch is not None:
            value, (o_first, o_rest) = self._switch
            against = (f" against ~{value:,.0f} s with {o_first} for this one and {o_rest} each after it: kept, the "
                       f"split the search runs (a change expected to gain less than {self.keep:.0%} does not pay "
                       "for the hosts' switch)")
        after = f" and {rest} each for the rest" if work > 1 else ""
        if pending.known is not None:
            typical = self.model.single(here) if here is not None else self.model.single(host or "")
            after += (f" (its probe: ~{pending.known:,.0f} s on one device, {pending.known / typical:.1f}x the "
                      f"search's typical ~{typical:,.0f} s)")
        what = (f"the remaining {_plural(work, 'candidate')}" if total is not None
                else f"the next {_plural(work, 'candidate')} (no end in sight)")
        verb = "wait for " if host is None else ""
        be = "is" if work == 1 else "are"
        reason = (f"{verb}gang of {first}: {what} {be} expected to finish in ~{end:,.0f} s with {first} for this "
                  f"one{after}{against} ({devices} devices, spread {self.model.spread():.2f})")
        return Allocation(host, first, reason, "plan" if host else "wait", round(end, 1), rest)

    def _kept(self, choices: dict[tuple[int, int], float]) -> dict[tuple[int, int], float]:
        """``choices`` narrowed to the split most of the search's running evaluations have (``(g, g)``), where that
        is expected to end within ``keep`` of the soonest: a change of split pays what the plans see only roughly
        (hosts drain to the new gang size while the workers' pulls refill them; an efficiency a few percent off);
        ``_switch``: the sooner plan it passed over, if any (``choose`` resets it)."""
        if not self._running or not self.keep:
            return choices
        current = max(sorted(set(self._running)), key=self._running.count)
        kept, soonest = choices.get((current, current)), min(choices.values())
        if kept is None or kept > soonest * (1 + self.keep):
            return choices
        if kept > soonest:
            self._switch = min((end, pair) for pair, end in choices.items())
        return {(current, current): kept}

    def _pick(self, hosts: Sequence[HostState], choices: dict[tuple[int, int], float], work: int) -> tuple[int, int]:
        """The plan among ``choices`` within ``tolerance`` of the soonest end: a gang that fits now, then a plan
        that keeps its own rule (this one like the rest: choosing "1 now, 4 for the rest" at every dispatch would
        never run the rest on 4), then the smaller gang; but where the work left fits the free devices, the wider:
        the devices a smaller gang leaves would idle until the barrier or the end, and a wider one shortens a
        candidate longer than the plans drew (a generation's last candidate, 2,002 s on one device, went on a pair
        that tied with a gang of 4 and set the generation's end 480 s later)."""
        soonest = min(choices.values())
        good = [pair for pair, end in choices.items() if end <= soonest * (1 + self.tolerance)]
        return min(good, key=lambda pair: (self._place(hosts, pair[0]) is None, pair[0] != pair[1] and work > 1,
                                           (-pair[0], -pair[1]) if self._starts_now(hosts, pair, work) else pair))

    def _starts_now(self, hosts: Sequence[HostState], pair: tuple[int, int], work: int) -> bool:
        """Whether, under the plan ``pair``, all ``work`` candidates left start now: this one's gang fits a host
        (:meth:`_place`) and the others' gangs fit the free devices left, host by host."""
        first, rest = pair
        here = self._place(hosts, first)
        if here is None:
            return False
        room = sum((host.free - first * (host.name == here)) // rest for host in hosts if rest in host.sizes)
        return room >= work - 1

    def _probe(self, hosts: Sequence[HostState], pending: Pending, plans: dict[tuple[int, int], float],
               soonest: float, chosen: int) -> tuple[int, int] | None:
        """A plan that measures a gang size barely measured yet, if one that fits now costs at most
        ``probe_cost`` of the soonest end (without two sizes measured, the model cannot tell their efficiency from
        the candidates' duration; scaling probes measure the one slope of every size)."""
        def seen(gang: int) -> int:  # measured, or on its way to be
            return self.model.measurements(gang) + self._running.count(gang) + self.model.rates_measured()

        options = [(value, pair) for pair, value in plans.items()
                   if pair[0] != chosen and seen(pair[0]) < self.probe and value <= soonest * (1 + self.probe_cost)
                   and self._place(hosts, pair[0]) is not None]
        # the cheapest whose scaling could give a candidate a gang (asked in order: each asks the plans twice)
        return next((pair for _, pair in sorted(options) if self._scaling_matters(hosts, pending, pair[0])), None)

    def _scaling_matters(self, hosts: Sequence[HostState], pending: Pending, gang: int) -> bool:
        """Whether measuring how gangs of ``gang`` scale could change the search's placements: unless this
        candidate and the rest get one device each both after a measurement that read good scaling (``SCALES_WELL``
        kept per added device) and after one that read bad (``SCALES_BADLY``). Where they do (many short candidates
        per device), a candidate run on ``gang`` only to measure it would cost its lost device time for nothing."""
        here = self._here if self._here is not None else hosts[0].name
        for kept in (SCALES_WELL, SCALES_BADLY):  # good scaling first: where it gives a gang, that settles it
            other = copy.copy(self)
            other.model, other.probe = self.model.as_if_probed(here, gang, kept), 0
            choice = other.choose(hosts, pending, self._here)
            if (choice.gang, choice.rest or 1) != (1, 1):
                return True
        return False

    def plans(self, hosts: Sequence[HostState], sizes: Sequence[int], work: int) -> dict[tuple[int, int], float]:
        """Expected seconds until ``work`` candidates are done, per plan (gang of this one, gang of the rest)."""
        spread = self.model.spread()
        rng = np.random.default_rng(self.seed)
        count = min(work, self._explicit_count(hosts, min(sizes)))
        factors = np.exp(rng.normal(-spread ** 2 / 2, spread, (self.samples, count + 1))) if spread > 0 \
            else np.ones((self.samples, count + 1))
        known, here = getattr(self, "_known", None), getattr(self, "_here", None)
        typical = self.model.duration(here if here is not None else hosts[0].name, 1)
        if known is not None:  # the probed candidate's own length, relative to the search's typical one there
            factors[:, 0] = known / typical
        self._rest_known = np.asarray(getattr(self, "_probes", ()), dtype=float) / typical
        width = max(h.devices for h in hosts)
        base = np.full((len(hosts), width), np.inf)
        for index, h in enumerate(hosts):
            unknown = h.devices - h.free - len(h.busy)
            base[index, :h.devices] = sorted([0.0] * (h.free + unknown) + [float(t) for t in h.busy])
        base = np.broadcast_to(base, (self.samples, *base.shape))
        # how well each gang size scales is itself uncertain until measured: each draw takes one efficiency per
        # size (one slope for every size: a model that scales badly on pairs does on quads), with the model's
        # expectation as its mean, so plans are compared under the posterior, not the prior's mean alone
        slopes = rng.standard_normal(self.samples)
        durations = {(h.name, s): self.model.duration(h.name, s) * unsure(slopes, self.model.uncertainty(s))
                     for h in hosts for s in h.sizes}
        result = {}
        for first in sizes:
            placed = self._place_first(hosts, base, durations, first, factors[:, 0], getattr(self, "_here", None))
            if placed is None:
                continue
            times, first_end = placed
            for rest in sizes:
                if work == 1 and rest != sizes[0]:
                    continue
                end = self._play_rest(hosts, times, durations, rest, work - 1, factors[:, 1:])
                if end is None:
                    continue
                result[(first, rest)] = float(np.mean(np.maximum(end, first_end)))
        return result

    def _explicit_count(self, hosts: Sequence[HostState], smallest: int) -> int:
        return self.explicit * sum(h.devices // smallest for h in hosts) + 1

    @staticmethod
    def _place_first(hosts: Sequence[HostState], base: np.ndarray, durations: dict[tuple[str, int], float],
                     gang: int, factor: np.ndarray, here: str | None) -> tuple[np.ndarray, np.ndarray] | None:
        """The device free times after this candidate starts on the host where it ends soonest (per draw), or on
        ``here``."""
        ends = np.full((base.shape[0], len(hosts)), np.inf)
        for index, h in enumerate(hosts):
            if gang in h.sizes and here in (None, h.name):
                ends[:, index] = base[:, index, gang - 1] + factor * durations[(h.name, gang)]
        if not np.isfinite(ends).any():
            return None
        chosen = np.argmin(ends, axis=1)
        end = ends[np.arange(base.shape[0]), chosen]
        times = base.copy()
        rows = np.arange(base.shape[0])
        times[rows, chosen, :gang] = end[:, None]
        times[rows, chosen] = np.sort(times[rows, chosen], axis=1)
        return times, end

    def _play_rest(self, hosts: Sequence[HostState], times: np.ndarray, durations: dict[tuple[str, int], float],
                   gang: int, count: int, factors: np.ndarray) -> np.ndarray | None:
        """When ``count`` candidates on gangs of ``gang`` are all done (per draw): the gang slots of each host free
        when the last of their devices does; the candidates before the last ``explicit`` per slot fill the slots
        evenly, the last ones go one by one to the slot that frees first."""
        slots, seconds = [], []
        for index, h in enumerate(hosts):
            if gang in h.sizes:
                slots.append(times[:, index, gang - 1:h.devices:gang][:, :h.devices // gang])
                seconds += [durations[(h.name, gang)]] * (h.devices // gang)
        others = [times[:, index, :h.devices] for index, h in enumerate(hosts)]
        floor = np.max(np.concatenate(others, axis=1), axis=1)
        if count == 0:
            return floor
        if not slots:
            return None
        free = np.concatenate(slots, axis=1)
        cost = np.stack(seconds, axis=1)
        explicit = min(count, factors.shape[1], self.explicit * free.shape[1])
        spread_over = count - explicit
        if spread_over:
            free = water_fill(free, cost, spread_over)
        rows = np.arange(free.shape[0])
        known = getattr(self, "_rest_known", ())
        for j in range(explicit):
            slot = np.argmin(free + cost, axis=1)
            # a waiting candidate whose probe measured it takes its own length, the others a draw
            factor = known[spread_over + j] if spread_over + j < len(known) else factors[:, j]
            free[rows, slot] += cost[rows, slot] * factor
        return np.maximum(free.max(axis=1), floor)

    def _place(self, hosts: Sequence[HostState], gang: int) -> str | None:
        """The host that takes a gang of ``gang`` now: the one with the fewest free devices that still fit it
        (big blocks stay free for big gangs), only ``here`` if given; ``None`` if none has room."""
        here = getattr(self, "_here", None)
        fits = [host for host in hosts if gang in host.sizes and host.free >= gang and here in (None, host.name)]
        return min(fits, key=lambda host: (host.free, host.name)).name if fits else None
