"""``auto`` off the allocation grid: hosts of 8 devices (gangs of 1, 2, 4, 8) where the grid has hosts of 4, other
searches (population 32, 160 evaluations or 4 generations, 4-minute candidates), spreads and scalings, and seeds
no setting was tuned on (50-52). The gang worker as it runs now (``--pull handback``: room and hand-back) against the
one before (``worker``), each as a ratio to the best fixed split. Run from the repository root::

    python benchmarks/allocation_hosts8.py     # about 5 minutes on one core
"""
from __future__ import annotations

import dataclasses
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.allocation_sim import Cluster, Probe, grid_scenario, simulate_search  # noqa: E402
from benchmarks.report import Report, command_line, table  # noqa: E402

CLUSTERS = {"16 on 2 hosts of 8": Cluster(2, 8), "64 on 8 hosts of 8": Cluster(8, 8)}
SHAPES = ((0.8, 0.85), (0.45, 0.95))  # (sigma, efficiency kept per device added)
SEEDS = (50, 51, 52)
SPLITS = (1, 2, 4, 8)


def mean_makespan(scenario, cluster, gang, pull="host") -> float:
    probe = dataclasses.replace(Probe(), continues="inside") if gang == "auto" else None
    return statistics.mean(simulate_search(scenario, cluster, gang, seed=seed, probe=probe, pull=pull).makespan
                           for seed in SEEDS)


def main(argv=None) -> None:
    report = Report("allocation-hosts8", "auto off the grid: hosts of 8 devices, other searches and seeds",
                    command_line(argv, "allocation_hosts8.py"))
    rows, ratios = [], {"worker": [], "handback": []}
    for name, cluster in CLUSTERS.items():
        for strategy in ("regularized", "generational"):
            for sigma, rho in SHAPES:
                scenario = grid_scenario(strategy, sigma, rho, population=32, generations=4, evaluations=160,
                                         duration=240.0)
                fixed = {gang: mean_makespan(scenario, cluster, gang) for gang in SPLITS}
                best = min(fixed, key=fixed.get)
                row = [name, strategy, sigma, rho, f"{fixed[best]:,.0f} (gangs of {best})"]
                for pull in ratios:
                    ratio = mean_makespan(scenario, cluster, "auto", pull) / fixed[best]
                    ratios[pull].append(ratio)
                    row.append(f"{ratio:.3f}")
                rows.append(row)
    report.add(table(["cluster", "search", "sigma", "efficiency", "best fixed split (s)", "auto before / best",
                      "auto now / best"], rows))
    report.add(table(["gang worker", "worst", "mean", "within 5%"], [
        [label, f"{max(ratios[pull]):.3f}", f"{statistics.mean(ratios[pull]):.3f}",
         f"{sum(r <= 1.05 for r in ratios[pull])} of {len(ratios[pull])}"]
        for label, pull in (("before (`worker`)", "worker"), ("now (`handback`)", "handback"))]))


if __name__ == "__main__":
    main()
