"""When a gang worker runs a scaling probe before it places a candidate, and on which gang: one rule for the real
worker (``webapp.worker.device_claims``) and the benchmark's simulator (``benchmarks/allocation_sim.py``).

A probe times a few training steps of the candidate on one device (its steps per second: with the evaluation's
steps, its own seconds on one device, ``Pending.known``) and, while the search has fewer than ``pairs`` efficiency
probes (of any gang size: the model fits one slope for all of them), on a gang (the ratio of the two rates: the
efficiency, ``ThroughputModel.observe_rates``): the gang good scaling would give the candidate here where it is
narrower than the widest free one (its probe is then the start of its evaluation, which trains on), the widest free
gang otherwise (``scaling_gang``). Lengths are worth timing only while the measured spread of durations is large
and where a short and a long candidate would be placed differently (``length_matters``); the efficiency probes run
until ``pairs`` regardless. A length alone is timed on the gang the candidate would get untimed, where a long one
would get it too (``length_gang``): a decision that keeps it then loses nothing to the probe.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from nas.allocation.cluster import decide, seen_by
from nas.allocation.model import SCALES_BADLY, SCALES_WELL, ThroughputModel
from nas.allocation.policy import Pending

#: the short candidate: the standard normal's 2.5th percentile of the search's durations
SHORT_TAIL = 1.96
#: the long candidate: its 99.87th percentile. Further out than the short one: a long candidate left on a narrow gang
#: ends the search late (the makespan is set by the longest), while a short one misplaced costs little
LONG_TAIL = 3.0
#: the long candidate is taken at the spread's upper 95% credible bound (``ThroughputModel.spread_bound``), not at the
#: fitted spread: the first few lengths, measured on as many hosts, read a spread of 1.0 as 0.54, and a candidate of
#: 32x the median went untimed onto one device (one-minute grid, seed 0: 1.62x the best fixed split)
SPREAD_CONFIDENCE = 1.645


@dataclasses.dataclass(frozen=True)
class ProbeRule:
    """Whether to probe, and the gang of the wide part."""

    pairs: int = 4  #: efficiency probes (of any gang size) the search collects
    min_spread: float = 0.45  #: lengths are probed only while the model's spread of durations exceeds this

    def wanted(self, model: ThroughputModel, sizes: Sequence[int]) -> bool:
        """Whether the next candidate of ``model``'s search is probed on a worker allowing gangs of ``sizes``."""
        return len(sizes) > 1 and (model.rates_measured() < self.pairs or model.spread() > self.min_spread)

    def wide_gang(self, model: ThroughputModel, sizes: Sequence[int], free: int) -> int:
        """The widest gang the wide part may take on a host with ``free`` idle devices, while the search has fewer than
        ``pairs`` efficiency probes; 1: no wide part (``scaling_gang`` may narrow it)."""
        fitting = [size for size in sizes if size <= free]
        wide = max(fitting) if fitting else 1
        return 1 if wide == 1 or model.rates_measured() >= self.pairs else wide


def length_matters(model: ThroughputModel, records: Sequence[Mapping[str, Any]], pending: Pending, now: float,
                   here: str, free: Mapping[str, int] | None = None, search: Any = None) -> bool:
    """Whether timing the candidate could change where it goes now: the decision (``decide``, on a copy of the
    model) for a short one and for a long one differs (the 2.5th percentile of the search's durations on one device
    of ``here``, as the decision sees them: with the search's running evaluations; the 99.87th as they could be
    spread, ``SPREAD_CONFIDENCE``). Where they agree, its one-device probe would only cost time."""
    return _tails(model, records, pending, now, here, free, search)[0]


def _tails(model: ThroughputModel, records: Sequence[Mapping[str, Any]], pending: Pending, now: float, here: str,
           free: Mapping[str, int] | None, search: Any) -> tuple[bool, float, float]:
    """Whether the length matters (:func:`length_matters`), with the median and the fitted spread of the durations
    the decision sees, on one device of ``here``."""
    view = ThroughputModel.from_state(model.state_dict())
    seen_by(view, records, pending, now, here, search)  # the tails of the durations the decision sees: with the
    # running evaluations (censored), without them the long ones still running are missing and the spread is low
    spread = view.spread()
    median = view.single(here) * math.exp(-spread ** 2 / 2)
    matters = len({_placed(model, records, pending, now, here, free, search, median * math.exp(tail))
                   for tail in (-SHORT_TAIL * spread, LONG_TAIL * view.spread_bound(SPREAD_CONFIDENCE))}) > 1
    return matters, median, spread


def length_gang(model: ThroughputModel, records: Sequence[Mapping[str, Any]], pending: Pending, now: float,
                here: str, free: Mapping[str, int] | None = None, search: Any = None) -> int:
    """The gang of ``here`` to time the candidate's length on; 0: none (``length_matters`` is false). The gang the
    decision gives it untimed (as ``pending`` says), where a long one (the search's 99.87th percentile, at the fitted
    spread) would get that gang here too: its probe is then the start of its evaluation, which trains on where the
    decision keeps that gang, and a short candidate leaving it loses the gang's start, not the barrier's. Elsewhere
    one device: a long candidate would leave that gang for a wider one, and the gang's start (its ranks, tens of
    seconds) would delay the one that ends the search."""
    matters, median, spread = _tails(model, records, pending, now, here, free, search)
    if not matters:
        return 0
    untimed = _placed(model, records, pending, now, here, free, search, pending.known)
    if untimed[0] != here or untimed[1] == 1:
        return 1
    long = median * math.exp(LONG_TAIL * spread)
    return untimed[1] if _placed(model, records, pending, now, here, free, search, long) == untimed else 1


def _placed(model: ThroughputModel, records: Sequence[Mapping[str, Any]], pending: Pending, now: float, here: str,
            free: Mapping[str, int] | None, search: Any, known: float | None) -> tuple[str | None, int]:
    """Where the decision (on a copy of ``model``) places a candidate of ``known`` seconds on one device: (host,
    gang)."""
    choice = decide(ThroughputModel.from_state(model.state_dict()), records,
                    dataclasses.replace(pending, known=known), now, here, free, search)
    return choice.host, choice.gang


def scaling_gang(model: ThroughputModel, records: Sequence[Mapping[str, Any]], pending: Pending, now: float,
                 here: str, wide: int, free: Mapping[str, int] | None = None, search: Any = None) -> int:
    """The gang of a wide probe of at most ``wide`` devices on ``here``; 1: none, it could not change how the search
    places its candidates. The decision (``decide``, on copies of the model) is asked after a probe that read good
    scaling (``SCALES_WELL`` kept per added device) and after one that read bad scaling (``SCALES_BADLY``):

    - where both give one device to this candidate and to the rest (many short candidates per device: one device
      each however they scale), 1: the probe would only hold devices for its setup; it is asked again at the next
      decision, where gangs may matter (the tail);
    - where good scaling gives this candidate a gang here narrower than ``wide``, that gang: the probe is the start of
      its evaluation, which trains on where the probe reads what was assumed, instead of starting over;
    - otherwise ``wide``."""
    for kept in (SCALES_WELL, SCALES_BADLY):  # good scaling first: where it gives a gang, that settles it
        choice = decide(model.as_if_probed(here, wide, kept), records, pending, now, here, free, search)
        if (choice.gang, choice.rest or 1) != (1, 1):
            narrower = kept == SCALES_WELL and choice.host == here and 1 < choice.gang < wide
            return choice.gang if narrower else wide
    return 1


def scaling_matters(model: ThroughputModel, records: Sequence[Mapping[str, Any]], pending: Pending, now: float,
                    here: str, wide: int, free: Mapping[str, int] | None = None, search: Any = None) -> bool:
    """Whether a wide probe on up to ``wide`` devices could change how the search places its candidates
    (``scaling_gang`` is more than 1)."""
    return scaling_gang(model, records, pending, now, here, wide, free, search) > 1


def single_seconds(rates: Mapping[int, float], steps: float) -> float:
    """A candidate's seconds on one device from its probe: ``steps`` (its evaluation's) at the one-device rate."""
    return float(steps) / float(rates[1])


def single_from_gang(model: ThroughputModel, host: str, gang: int, rate: float, steps: float) -> float:
    """A candidate's seconds on one device from a probe on a gang alone (``length_gang``): ``steps`` at the gang's
    ``rate``, times what the gang gains on ``host`` as ``model`` expects it (``gang x efficiency``)."""
    return float(steps) / float(rate) * gang * model.efficiency(host, gang)
