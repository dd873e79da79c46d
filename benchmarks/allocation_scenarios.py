"""The searches and clusters the allocation simulator (``benchmarks/allocation_sim.py``) runs: a scenario (a search
and its candidates' cost), a cluster of hosts, and the benchmark's grid of them (``benchmarks/allocation.py``)."""
from __future__ import annotations

import dataclasses
from typing import Any


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
