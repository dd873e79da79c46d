"""The scaling probe the allocation simulator (``benchmarks/allocation_sim.py``) runs before ``auto`` places a
candidate, as the gang worker runs it (``webapp.worker.device_claims``): what it costs, what it measures, and which
of its wall seconds the evaluation does not get back."""
from __future__ import annotations

import dataclasses
import math
import random
from typing import Any

from nas.allocation import Allocation, ProbeRule, ThroughputModel, gang_duration, scaling_gang, single_from_gang


#: Which part of a probe the evaluation goes on from (``Probe.continues``).
CONTINUES = ("none", "one", "inside", "both")


@dataclasses.dataclass(frozen=True)
class Probe:
    """The scaling probe a gang worker runs on a candidate before it is placed (``auto`` only): a few training
    steps on one device, which time the candidate (its steps per second, so its seconds on one device), then, while
    the search has fewer than ``pairs`` efficiency probes (of any size), on a gang of the worker's free devices (the
    ratio of the two rates: the efficiency): the one good scaling would give the candidate where it is narrower
    than the widest free gang, the widest otherwise (``nas.allocation.scaling_gang``). The one-device part costs
    ``setup`` seconds, the gang part ``wide_setup`` (its rank processes start and meet), each plus ``fraction`` of
    the candidate's duration on that gang; each measured rate is off by a lognormal factor of ``noise``. The
    candidate starts after its probe on the gang chosen; the probe's other devices are held for its duration.

    ``continues``: the probe's steps are the first steps of the candidate's training, so a decision that keeps the
    configuration a part of the probe ran on goes on from that part's state: that part costs nothing (its setup is
    the evaluation's own, which no split is charged for, and its steps are done), and only the other part's time
    is lost. ``"both"``: the one-device part and the wide gang (on its host) go on; ``"inside"``: what the real
    worker does (``webapp.worker.device_claims.probe_inside``): a probe without a wide part goes on from its one
    device, one with a wide part from its gang (its one-device part runs apart first and is lost); ``"one"``: only
    a probe without a wide part (the real worker before the wide part went inside the evaluation: a probe with a
    wide part ran apart and was paid whole); ``"none"``: every decision starts again after the whole probe. The
    charges are the real worker's, measured on the CPU (``benchmarks/allocation_probe_real.py``): a one-device
    probe 0.2-4.3 s, 13 s for a worker process's first (the data set loads); a probe on ``cpu,cpu`` 27-37 s, mostly
    starting the two ranks.

    ``lengths_on_gang``: after the efficiency probes, a length alone is timed where it could change the placement,
    on the gang the candidate would get untimed where a long one would get it too (``nas.allocation.length_gang``),
    as the real worker does: the gang's rate, read through the efficiency the model expects, with no one-device
    part; a decision that keeps that gang loses nothing, any other loses the gang's part (``wide_setup`` and
    ``fraction``). ``False``: on one device, as before."""

    fraction: float = 0.01
    setup: float = 5.0
    wide_setup: float = 30.0
    noise: float = 0.05
    pairs: int = 4
    min_spread: float = 0.45  #: lengths are probed only while the measured spread of durations exceeds this (a
    #: probe is worth its time where lengths are unpredictable); the efficiency probes run until ``pairs`` regardless
    steps: float = 1000.0  #: steps of one evaluation (any number: rates are steps/s, the durations their ratio)
    continues: str = "both"
    lengths_on_gang: bool = True  #: a length alone is timed on the gang the candidate would get untimed, where a long
    #: one would get it too (``nas.allocation.length_gang``): only that gang's rate, no one-device part, no efficiency

    @property
    def rule(self) -> ProbeRule:
        """When to probe and on which gang: the real worker's rule (``nas.allocation.ProbeRule``)."""
        return ProbeRule(self.pairs, self.min_spread)


def _probe_single(probe: Probe, single: float, key: str) -> tuple[float, float]:
    """The one-device part of ``probe`` on a candidate of ``single`` seconds: (the seconds it measures, its wall
    seconds)."""
    rate = probe.steps / single * math.exp(random.Random(f"probe:{key}").gauss(0.0, probe.noise))
    return probe.steps / rate, probe.setup + probe.fraction * single


def _wide_part(probe: Probe, model: ThroughputModel, records: list, pending: Any, now: float, prober: str,
               free: dict[str, int], sizes: tuple[int, ...], search: Any) -> tuple[int, int]:
    """A probe's wide gang on ``prober``: as ``probe``'s rule asks for it (the widest the free devices allow while the
    search has too few) and as the real worker runs it (``device_claims._wide``: only where the scaling it reads
    could change the placement, on the gang good scaling would give it, ``scaling_gang``); 1: none."""
    rule = probe.rule.wide_gang(model, sizes, free[prober])
    return rule, scaling_gang(model, records, pending, now, prober, rule, free, search) if rule > 1 else 1


def _probe_wide(probe: Probe, model: ThroughputModel, single: float, measured: float, efficiency_: Any, here: str,
                wide: int, key: str) -> tuple[float, int]:
    """The wide part of ``probe`` on ``wide`` devices of ``here`` (as the worker chooses it: ``ProbeRule.wide_gang``,
    narrowed by ``scaling_gang``), fed to the model as the worker does: (its wall seconds, the gang; 0 and 1: none)."""
    if wide == 1:
        return 0.0, 1
    seconds = gang_duration(single, wide, efficiency_)
    rate = probe.steps / seconds * math.exp(random.Random(f"probe-wide:{key}").gauss(0.0, probe.noise))
    model.observe_rates(here, {1: probe.steps / measured, wide: rate})
    return probe.wide_setup + probe.fraction * seconds, wide


def _probe_on_gang(probe: Probe, model: ThroughputModel, single: float, efficiency_: Any, here: str, gang: int,
                   index: int, key: str) -> tuple[tuple[float, float], tuple]:
    """A length timed on ``gang`` devices of ``here`` alone (``nas.allocation.length_gang``), as the real worker
    times it (``device_claims.probe_inside``): the gang's rate, read as one-device seconds through the efficiency
    ``model`` expects (``single_from_gang``). Returns the candidate's ``singles`` entry (those seconds; no one-device
    part to pay) and its ``wides`` entry: the gang's wall seconds (its ranks start, ``wide_setup``), lost where the
    decision leaves that gang."""
    seconds = gang_duration(single, gang, efficiency_)
    rate = probe.steps / seconds * math.exp(random.Random(f"probe:{key}").gauss(0.0, probe.noise))
    return ((single_from_gang(model, here, gang, rate, probe.steps), 0.0),
            (index, probe.wide_setup + probe.fraction * seconds, gang, here))


def _probe_lost(probe: Probe, single_wall: float, wide: tuple, choice: Allocation) -> float:
    """The wall seconds of a candidate's probe that its evaluation does not get back (``wide``: its wide part, (index,
    wall seconds, gang, host)): with ``probe.continues``, the part whose configuration the decision keeps goes on
    training, and only the other part is lost (see :class:`Probe`)."""
    if probe.continues not in CONTINUES:
        raise ValueError(f"`continues` must be one of {', '.join(CONTINUES)} (got {probe.continues!r})")
    if probe.continues == "inside" and choice.gang == wide[2] and (wide[2] == 1 or choice.host == wide[3]):
        return 0.0 if wide[2] == 1 else single_wall  # the probed gang goes on; a wide one lost its one-device part
    if probe.continues == "both" and choice.gang == 1:  # the one-device part goes on (after the wide part, if any)
        return wide[1]
    if probe.continues == "one" and choice.gang == 1 and wide[2] == 1:  # a probe of one device only: it goes on
        return 0.0
    if probe.continues == "both" and choice.gang == wide[2] and choice.host == wide[3]:  # the probing gang goes on
        return single_wall
    return single_wall + wide[1]
