"""The allocator fed the truth: a benchmark-only diagnostic of where ``auto`` loses to the best fixed split.

The same planner and decision (``nas.allocation.decide``, ``Allocator``), given what a worker can only learn:

- ``oracle`` (``Truth(durations=True)``): the scenario's efficiency per gang size, the durations' true median and
  spread, every asked candidate's own one-device seconds (``Pending.known`` for the one placed, ``Pending.probes``
  for every one waiting after it) and, for every running one, its exact time left (published with its own length
  and no spread). No probe runs and none is paid. Candidates the strategy has not asked yet do not exist: the plans
  draw them from the true distribution.
- ``oracle-rho`` (``Truth(durations=False)``): the true efficiency only (no wide probes: nothing to measure);
  durations are learned as ``auto + probe`` learns them (one-device probes while the spread is large, paid as the
  grid's probe, and finished evaluations).

``probe - oracle-rho`` is then the cost of not knowing the efficiency, ``oracle-rho - oracle`` that of not knowing the
durations, and ``oracle`` against the best fixed split the planner's own. ``nas/allocation`` is unchanged: the truth
enters through :class:`TrueModel`, a ``ThroughputModel`` whose fit is the scenario's, and the ``Pending`` fields the
worker fills from its probes.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from nas.allocation import ThroughputModel

#: What ``rates_measured`` answers for a model that knows the efficiency: more scaling probes than any rule asks for
#: (``ProbeRule.pairs``, ``Allocator.probe``), so neither a wide probe nor a gang size "to measure" is ever spent.
ENOUGH = 10**6


class TrueModel(ThroughputModel):
    """A throughput model that knows the scenario's efficiency curve (its prior, never refitted, no uncertainty)
    and, with ``durations``, the one-device durations' median and spread (lognormal: the mean is
    ``median x exp(sigma^2 / 2)``)."""

    def __init__(self, efficiency: Any, median: float, sigma: float, durations: bool, **kwargs: Any) -> None:
        kwargs.pop("prior_efficiency", None)
        super().__init__(prior_efficiency=efficiency, **kwargs)
        self.durations = durations
        self.truth = (math.log(median), {}, 0.0, float(sigma))

    def _slope(self, lean: float, spread_k: float, variance: float) -> float:
        return 0.0  # the prior curve is the true one: no slope to fit

    def _fitted(self) -> tuple[float, dict[str, float], float, float]:
        return self.truth if self.durations else super()._fitted()

    def uncertainty(self, gang: int) -> float:
        return 0.0

    def rates_measured(self, gang: int | None = None) -> int:
        return ENOUGH


@dataclasses.dataclass(frozen=True)
class Truth:
    """What the oracle is told (see the module's docstring)."""

    durations: bool = True  #: also every candidate's own length and the durations' distribution

    def model(self, scenario: Any, **kwargs: Any) -> TrueModel:
        """The search's model for ``scenario`` (``kwargs``: the ``ThroughputModel`` arguments the search has)."""
        return TrueModel(scenario.efficiency, scenario.duration, scenario.sigma, self.durations, **kwargs)

    @staticmethod
    def exact(entry: dict[str, Any]) -> dict[str, Any]:
        """A running evaluation's published record (``running_entry`` with its ``single``) with no spread: its time
        left is then exactly ``expected - elapsed`` (``nas.allocation.time_left``)."""
        return {**entry, "spread": 0.0}


#: ``benchmarks/allocation.py --policies`` name -> what that policy is told.
TRUTHS = {"oracle": Truth(durations=True), "oracle-rho": Truth(durations=False)}
