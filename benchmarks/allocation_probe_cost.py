"""Where ``auto + probe`` stays more than 5% behind the best fixed split (``results/allocation-probe.md``): how much
of that is the probe's own time. The same scenarios and seeds, ``auto + probe`` with the grid's probe and with a
probe that costs nothing (same information, no device time): the gap between them is the probe's cost, what is left
the policy's. Run from the repository root after ``benchmarks/allocation.py --policies probe``::

    python benchmarks/allocation_probe_cost.py
"""
from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.allocation import PROBE, SPLITS  # noqa: E402
from benchmarks.allocation_sim import CLUSTERS, Probe, grid_scenario, simulate_search  # noqa: E402
from benchmarks.report import Report, command_line, table  # noqa: E402

FREE = Probe(setup=0.0, wide_setup=0.0, fraction=0.0)
RESULTS = Path(__file__).resolve().parent / "results"


def losing(path: Path, limit: float) -> list[tuple[str, str, float, float]]:
    """The scenarios of the grid's table whose ``auto + probe`` ratio exceeds ``limit``."""
    rows = []
    for line in path.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 9 and cells[0] in CLUSTERS:
            if float(cells[8]) > limit:
                rows.append((cells[0], cells[1], float(cells[2]), float(cells[3])))
    return rows


def _run(job: tuple) -> tuple:
    key, gang, seed, probe = job
    cluster, strategy, sigma, rho = key
    outcome = simulate_search(grid_scenario(strategy, sigma, rho), CLUSTERS[cluster], gang, seed=seed, probe=probe)
    return key, gang if probe is None else ("free" if probe == FREE else "probe"), outcome.makespan


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--limit", type=float, default=1.05, help="ratio above which a scenario is examined")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    keys = losing(RESULTS / "allocation-probe.md", args.limit)
    jobs = [(key, gang, seed, None) for key in keys for gang in SPLITS for seed in range(args.seeds)]
    jobs += [(key, "auto", seed, probe) for key in keys for seed in range(args.seeds) for probe in (PROBE, FREE)]
    with multiprocessing.Pool(args.workers) as pool:
        results = pool.map(_run, jobs, chunksize=1)
    runs: dict = {}
    for key, what, makespan in results:
        runs.setdefault(key, {}).setdefault(what, []).append(makespan)
    report = Report("allocation-probe-cost", "auto + probe: the probe's cost against the policy's",
                    command_line(argv, "allocation_probe_cost.py"))
    report.add(f"The scenarios of `results/allocation-probe.md` with `auto + probe` above {args.limit:g}x the best "
               f"fixed split, {args.seeds} seeds each (the grid's). `probe`: the grid's probe ({PROBE.setup:g} s "
               f"setup on one device, {PROBE.wide_setup:g} s on a gang, plus {PROBE.fraction:.0%} of the duration "
               f"per gang size); `free`: the same measurements at "
               "no device time. Ratio: mean makespan / the best fixed split's.")
    rows = []
    for key in keys:
        mean = {what: statistics.mean(values) for what, values in runs[key].items()}
        best = min(mean[g] for g in SPLITS)
        rows.append([key[0], key[1], f"{key[2]:g}", f"{key[3]:g}", f"{best:,.0f}",
                     f"{mean['probe'] / best:.3f}", f"{mean['free'] / best:.3f}"])
    report.add(table(["cluster", "search", "sigma", "rho", "best fixed (s)", "auto + probe", "free probe"], rows))


if __name__ == "__main__":
    main()
