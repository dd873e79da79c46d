"""Gangs and the allocator on 16 simulated devices (seed 003's Table II, and its resource-aware scheduler):
fixed splits 1 x 16, 4 x 4, 8 x 2 and 16 x 1 against ``auto``, for a generational and a regularized search,
with small candidates (scale poorly over devices) and large ones (scale well).

A discrete-event simulation (``benchmarks/allocation_sim.py``): the real strategies and the real allocator, the
simulated evaluator's lognormal durations and its gang model ``T(g) = T(1) / (g x efficiency(g))``; no
processes, no sleeping, so the figures do not depend on this machine. Each figure is the mean over ``--seeds``
searches. Printed: makespan, device utilisation (device-seconds busy / device-seconds available), speedup
against one device (the same evaluations' one-device seconds, summed, over the makespan). Run from the
repository root::

    python benchmarks/allocation.py
"""
from __future__ import annotations

import argparse
import collections
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.allocation_sim import Outcome, Scenario, simulate_search  # noqa: E402
from benchmarks.report import Report, command_line, table  # noqa: E402

DEVICES = 16
SPLITS = {"1 x 16": 16, "4 x 4": 4, "8 x 2": 2, "16 x 1": 1, "auto": "auto"}


def scenarios(args: argparse.Namespace) -> list[Scenario]:
    generational = {"population": args.population, "generations": args.generations}
    regularized = {"population": args.population, "sample_size": 5, "max_evaluations": args.evaluations}
    small = {"duration": args.small_duration, "sigma": args.sigma, "efficiency": args.small_efficiency}
    large = {"duration": args.large_duration, "sigma": args.sigma, "efficiency": args.large_efficiency}
    return [
        Scenario("generational, small", "generational", generational, **small),
        Scenario("generational, large", "generational", generational, **large),
        Scenario("regularized, small", "regularized", regularized, **small),
        Scenario("regularized, large", "regularized", regularized, **large),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="searches per figure (default 5)")
    parser.add_argument("--population", type=int, default=20)
    parser.add_argument("--generations", type=int, default=10)
    parser.add_argument("--evaluations", type=int, default=200, help="regularized: evaluations (default 200)")
    parser.add_argument("--sigma", type=float, default=0.3, help="lognormal shape of the durations (default 0.3)")
    parser.add_argument("--small-duration", type=float, default=60.0, help="small candidates: median seconds")
    parser.add_argument("--small-efficiency", type=float, default=0.75, help="small: efficiency per doubling")
    parser.add_argument("--large-duration", type=float, default=1800.0, help="large candidates: median seconds")
    parser.add_argument("--large-efficiency", type=float, default=0.95, help="large: efficiency per doubling")
    parser.add_argument("--output", default="allocation", help="results/<output>.md (default allocation)")
    args = parser.parse_args(argv)
    report = Report(args.output, "Gangs and the allocator: 16 simulated devices, fixed splits against auto",
                    command_line(argv, "allocation.py"))
    report.add(
        f"Discrete-event simulation (no processes; the figures do not depend on this machine): the real strategies "
        f"(`nas.strategies`, pelee space) and allocator (`nas.allocation`), lognormal durations (sigma {args.sigma}). "
        f"Small candidates: median {args.small_duration:g} s on one device, efficiency {args.small_efficiency:g} "
        f"kept per doubling of the gang (a gang of 16 keeps {args.small_efficiency ** 4:.2f}); large: median "
        f"{args.large_duration:g} s, {args.large_efficiency:g} per doubling ({args.large_efficiency ** 4:.2f} at "
        f"16). Generational: population {args.population}, {args.generations} generations (a generation is about "
        f"as large as the 16 devices: every generation is a tail); regularized: population {args.population}, "
        f"{args.evaluations} evaluations. Mean of {args.seeds} seeds per figure; `auto` starts from a 60 s prior "
        "and learns durations and efficiencies as its evaluations end.")
    verdicts = []
    for scenario in scenarios(args):
        outcomes: dict[str, list[Outcome]] = {name: [] for name in SPLITS}
        for seed in range(args.seeds):
            for name, gang in SPLITS.items():
                outcomes[name].append(simulate_search(scenario, DEVICES, gang, seed=seed))
        makespan = {name: statistics.mean(o.makespan for o in runs) for name, runs in outcomes.items()}
        best_fixed = min((value, name) for name, value in makespan.items() if name != "auto")
        rows = []
        for name, runs in outcomes.items():
            gangs: collections.Counter = sum((o.gangs for o in runs), collections.Counter())
            used = (", ".join(f"{g}: {n / args.seeds:.1f}" for g, n in sorted(gangs.items())) if name == "auto"
                    else f"{SPLITS[name]}")
            rows.append([name, f"{makespan[name]:,.0f}",
                         f"{statistics.mean(o.utilisation(DEVICES) for o in runs):.2f}",
                         f"{statistics.mean(o.speedup() for o in runs):.2f}",
                         f"{makespan[name] / best_fixed[0]:.3f}",
                         f"{statistics.mean(o.evaluations for o in runs):.0f}", used])
        report.add(f"## {scenario.name}\n\n" + table(
            ["split", "makespan, s", "device utilisation", "speedup vs 1 device", "makespan / best fixed",
             "evaluations", "gang sizes used (auto: evaluations per size, per search)"], rows))
        ratio = makespan["auto"] / best_fixed[0]
        verdicts.append([scenario.name, best_fixed[1], f"{ratio:.3f}",
                         "yes" if ratio <= 1.05 else "NO", "yes" if ratio < 1 else "no"])
    report.add("## Verdict (target: auto within 5% of the best fixed split everywhere, better on at least one)\n\n"
               + table(["scenario", "best fixed split", "auto / best fixed", "within 5%", "better than every fixed"],
                       verdicts))


if __name__ == "__main__":
    main()
