"""What one evaluation of this search takes on a gang of ``g`` devices of a host, learned from measurements.

Before any measurement the model assumes ``prior_duration`` seconds on one device and the efficiency curve of
:mod:`nas.allocation.efficiency`; each measured duration moves the estimate of its (host, gang size) towards
what was measured (an exponentially weighted mean, so a search whose candidates grow is followed), and a
(host, gang size) never measured is derived from the host's one-device estimate through the curve.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from nas.allocation.efficiency import EfficiencySpec, check_efficiency, efficiency


@dataclasses.dataclass
class _Estimate:
    mean: float
    count: int


class ThroughputModel:
    """Expected seconds per evaluation per (host, gang size).

    Args:
        prior_duration: seconds one evaluation is assumed to take on one device before any measurement.
        prior_efficiency: the efficiency curve assumed before measurements (see ``check_efficiency``).
        prior_weight: how many measurements the prior counts for, per (host, gang size).
        decay: weight of the newest measurement in the running mean once more than ``1 / decay`` are in.
    """

    def __init__(self, prior_duration: float = 60.0, prior_efficiency: EfficiencySpec = None,
                 prior_weight: float = 1.0, decay: float = 0.1) -> None:
        if not (isinstance(prior_duration, (int, float)) and math.isfinite(prior_duration) and prior_duration > 0):
            raise ValueError(f"`prior_duration` must be a positive number of seconds (got {prior_duration!r})")
        if not 0 < decay <= 1:
            raise ValueError(f"`decay` must be in (0, 1] (got {decay!r})")
        if prior_weight < 0:
            raise ValueError(f"`prior_weight` must be at least 0 (got {prior_weight!r})")
        self.prior_duration = float(prior_duration)
        self.prior_efficiency = check_efficiency(prior_efficiency, "prior_efficiency")
        self.prior_weight = float(prior_weight)
        self.decay = float(decay)
        self._estimates: dict[tuple[str, int], _Estimate] = {}
        self._spread = _Estimate(0.0, 0)  #: mean squared log-ratio of a measurement to its estimate

    def observe(self, host: str, gang: int, seconds: float) -> None:
        """Record that one evaluation on a gang of ``gang`` devices of ``host`` took ``seconds``."""
        if gang < 1:
            raise ValueError(f"`gang` must be at least 1 (got {gang})")
        if not (math.isfinite(seconds) and seconds > 0):
            return  # a failed or instant evaluation says nothing about throughput
        estimate = self._estimates.get((host, gang))
        if estimate is None:
            self._estimates[(host, gang)] = _Estimate(float(seconds), 1)
            return
        self._spread.count += 1
        self._spread.mean += (math.log(seconds / estimate.mean) ** 2 - self._spread.mean) / self._spread.count
        estimate.count += 1
        weight = max(1.0 / estimate.count, self.decay)
        estimate.mean += weight * (seconds - estimate.mean)

    def measured(self, host: str) -> dict[int, tuple[float, int]]:
        """The gang sizes measured on ``host``: size -> (mean seconds, measurements)."""
        return {gang: (e.mean, e.count) for (name, gang), e in sorted(self._estimates.items()) if name == host}

    def single(self, host: str) -> float:
        """Expected seconds on one device of ``host``: measured there, else derived from its other gang sizes,
        else the mean of the other hosts' one-device estimates (the same search's candidates), else the prior."""
        own = self._estimates.get((host, 1))
        if own is not None:
            return own.mean
        derived = [(e.mean * gang * efficiency(gang, self.prior_efficiency), e.count)
                   for (name, gang), e in self._estimates.items() if name == host]
        if derived:
            return sum(value * count for value, count in derived) / sum(count for _, count in derived)
        others = [e.mean for (name, gang), e in self._estimates.items() if gang == 1]
        return sum(others) / len(others) if others else self.prior_duration

    def duration(self, host: str, gang: int) -> float:
        """Expected seconds of one evaluation on ``gang`` devices of ``host``."""
        prior = self.single(host) / (gang * efficiency(gang, self.prior_efficiency))
        estimate = self._estimates.get((host, gang))
        if estimate is None or gang == 1:
            return prior if estimate is None else estimate.mean
        count = min(estimate.count, 1 / self.decay)
        return (count * estimate.mean + self.prior_weight * prior) / (count + self.prior_weight)

    def spread(self) -> float:
        """How much one evaluation's duration varies around its estimate: the standard deviation of
        ``log(measured / estimated)`` (0 before two measurements of a same gang size)."""
        return math.sqrt(self._spread.mean)

    def efficiency(self, host: str, gang: int) -> float:
        """The expected parallel efficiency ``T(1) / (g x T(g))`` of a gang of ``gang`` on ``host``."""
        return self.single(host) / (gang * self.duration(host, gang))

    def per_device_hour(self, host: str, gang: int) -> float:
        """Expected completed evaluations per device-hour on gangs of ``gang`` devices of ``host``."""
        return 3600.0 / (gang * self.duration(host, gang))

    def state_dict(self) -> dict[str, Any]:
        """The model as JSON data (the loop keeps it with the search)."""
        return {
            "prior_duration": self.prior_duration, "prior_efficiency": self.prior_efficiency,
            "prior_weight": self.prior_weight, "decay": self.decay,
            "estimates": [[host, gang, e.mean, e.count] for (host, gang), e in sorted(self._estimates.items())],
            "spread": [self._spread.mean, self._spread.count],
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ThroughputModel:
        """The model saved by :meth:`state_dict`."""
        model = cls(state["prior_duration"], state.get("prior_efficiency"), state.get("prior_weight", 1.0),
                    state.get("decay", 0.1))
        for host, gang, mean, count in state.get("estimates", []):
            model._estimates[(str(host), int(gang))] = _Estimate(float(mean), int(count))
        spread, count = state.get("spread", [0.0, 0])
        model._spread = _Estimate(float(spread), int(count))
        return model
