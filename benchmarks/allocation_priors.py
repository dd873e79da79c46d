"""Where ``auto`` loses to the best fixed split, and what the prior has to do with it: the grid's corners (every
cluster and search, sigma 0.3 and 1.0, efficiency 0.6 and 0.97 per added device), 3 seeds, ``auto`` under its
default prior and under others, and for each scenario where its longest candidate ran.

The longest candidate of a search with a wide spread sets its makespan (with sigma 1.0 and 120 candidates it
takes ~5 to 39x the median); the table says when it was dispatched, how many evaluations had been measured then,
and the gang it got, next to the gang the best fixed split gives it. Run from the repository root::

    python benchmarks/allocation_priors.py     # 14 minutes on 2 cores shared with other work
"""
from __future__ import annotations

import argparse
import itertools
import multiprocessing
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.allocation_sim import CLUSTERS, SEARCH, grid_scenario, simulate_search  # noqa: E402
from benchmarks.report import Report, command_line, table  # noqa: E402
from evaluators.simulated import draw_duration  # noqa: E402
from nas.allocation import decide  # noqa: E402

SPLITS = (1, 2, 4)
#: The priors compared: the default (spread 0.6, 0.8 kept per added device) and one nearer the long tails and the
#: good scalers (spread 1.0, 0.9 per added device).
PRIORS = {
    "default (0.6, 0.8)": {},
    "wide, scaling (1.0, 0.9)": {"prior_spread": 1.0,
                                 "prior_efficiency": {str(g): 0.9 ** (g - 1) for g in (2, 4, 8, 16, 32, 64)}},
}


class _Traced:
    """The planner, remembering the gang and the evaluations measured at each candidate's dispatch."""

    def __init__(self) -> None:
        self.dispatched: list[tuple[float, int, int]] = []  # (now, gang, evaluations measured)

    def __call__(self, model, records, pending, now, here, free):
        choice = decide(model, records, pending, now, here, free, search=SEARCH)
        if choice.host is not None:
            self.dispatched.append((now, choice.gang, sum(model.measurements(g) for g in SPLITS)))
        return choice


def _run(job: tuple) -> tuple:
    key, gang, seed, prior = job
    scenario = grid_scenario(key[1], key[2], key[3])
    traced = _Traced() if gang == "auto" else None
    outcome = simulate_search(scenario, CLUSTERS[key[0]], gang, seed=seed, policy=traced,
                              prior=PRIORS[prior] if prior else None)
    config = {"duration": scenario.duration, "distribution": "lognormal", "sigma": scenario.sigma}
    singles = [draw_duration(config, f"{scenario.name}:{seed}:{n}") for n in range(outcome.evaluations)]
    longest = max(range(len(singles)), key=singles.__getitem__)
    where = traced.dispatched[longest] if traced else None
    return key, prior or gang, seed, outcome.makespan, (longest, singles[longest], where)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--output", default="allocation-priors")
    args = parser.parse_args(argv)
    keys = list(itertools.product(CLUSTERS, ("regularized", "generational"), (0.3, 1.0), (0.6, 0.97)))
    jobs = [(key, gang, seed, None) for key in keys for seed in range(args.seeds) for gang in SPLITS]
    jobs += [(key, "auto", seed, prior) for key in keys for seed in range(args.seeds) for prior in PRIORS]
    with multiprocessing.Pool(args.workers) as pool:
        results = pool.map(_run, jobs, chunksize=1)
    cells: dict = {}
    for key, split, seed, makespan, longest in results:
        cells.setdefault(key, {}).setdefault(split, {})[seed] = (makespan, longest)
    report = Report(args.output, "Where auto loses: the first wave, decided by the prior",
                    command_line(argv, "allocation_priors.py"))
    report.add("Same simulation as `benchmarks/allocation.py` (the real strategies and `nas.allocation.decide`), "
               f"the grid's corners, {args.seeds} seeds; ratio: mean makespan of `auto` under the prior / the best "
               "fixed split's. Prior: (spread of durations, efficiency kept per added device) before any "
               "measurement.")
    rows, worst = [], {}
    for key in keys:
        mean = {split: statistics.mean(m for m, _ in cells[key][split].values()) for split in cells[key]}
        best = min(SPLITS, key=lambda g: mean[g])
        row = [key[0], key[1], f"{key[2]:g}", f"{key[3]:g}", f"{best} ({mean[best]:,.0f} s)"]
        for prior in PRIORS:
            ratio = mean[prior] / mean[best]
            row.append(f"{ratio:.3f}")
            worst[prior] = max(worst.get(prior, (0.0, None)), (ratio, key))
        rows.append(row)
    report.add("## auto / best fixed split, per prior\n\n"
               + table(["cluster", "search", "sigma", "rho", "best fixed"] + list(PRIORS), rows))
    summary = []
    for prior in PRIORS:
        ratios = [float(row[5 + list(PRIORS).index(prior)]) for row in rows]
        ratio, key = worst[prior]
        summary.append([prior, f"{ratio:.3f}", f"{key[0]}, {key[1]}, sigma {key[2]:g}, rho {key[3]:g}",
                        f"{statistics.mean(ratios):.3f}", f"{sum(r <= 1.05 for r in ratios)} of {len(ratios)}"])
    report.add("## Summary\n\n" + table(["prior", "worst ratio", "where", "mean ratio", "within 5%"], summary))
    first = next(iter(PRIORS))
    trace = []
    for key in keys:
        if key[2] < 1.0:
            continue
        best = min(SPLITS, key=lambda g: statistics.mean(m for m, _ in cells[key][g].values()))
        for seed, (makespan, (index, single, (now, gang, measured))) in sorted(cells[key][first].items()):
            trace.append([key[0], key[1], f"{key[3]:g}", seed, index, f"{single:,.0f}", f"{now:,.0f}", measured,
                          gang, best, f"{makespan / cells[key][best][seed][0]:.2f}"])
    report.add("## Where the longest candidate ran (sigma 1.0, default prior)\n\n"
               "Its index among the search's candidates, its seconds on one device, when `auto` dispatched it "
               "(s from the start) and how many evaluations it had measured by then, the gang it got and the one "
               "the best fixed split gives every candidate; last: this seed's makespan over the best fixed "
               "split's.\n\n"
               + table(["cluster", "search", "rho", "seed", "candidate", "s on 1 device", "dispatched at",
                        "measured then", "auto's gang", "best fixed", "ratio (this seed)"], trace))


if __name__ == "__main__":
    main()
