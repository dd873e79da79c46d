"""Where ``auto`` loses to the best fixed split: the planner's share and the information's, per scenario of the grid.

Runs ``oracle`` and ``oracle-rho`` (``benchmarks/allocation_oracle.py`` says what each is told) on the grid's
scenarios and seeds, beside the fixed splits and ``auto + probe`` of a grid already run
(``results/allocation-probe-continue-one.md``: ``allocation.py --policies probe --continues one``; the simulation
is deterministic per scenario and seed, so those columns need no rerun), and writes ``results/allocation-oracle.md``:
per scenario each policy's ratio to the best fixed split and, in units of the best fixed split's makespan,

- planner: ``oracle - 1`` (what the planner loses knowing everything a worker could learn);
- efficiency unknown: ``auto + probe - oracle-rho`` (learning each gang size's efficiency, its wide probes included);
- durations unknown: ``oracle-rho - oracle`` (learning the lengths, paying their probes).

The scenarios ``auto + probe`` misses (above 5%) run first. Run from the repository root::

    python benchmarks/allocation_oracle_split.py                       # every scenario of the grid
    python benchmarks/allocation_oracle_split.py --scenarios missed    # the ones auto + probe misses

(``allocation.py --policies probe,oracle-rho,oracle`` runs the same policies with every column recomputed.)
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.allocation import PROBE  # noqa: E402
from benchmarks.allocation_oracle import TRUTHS  # noqa: E402
from benchmarks.allocation_sim import CLUSTERS, grid_scenario, simulate_search  # noqa: E402
from benchmarks.report import RESULTS, Report, command_line, table  # noqa: E402

BASE = ("fixed 1", "fixed 2", "fixed 4", "auto + probe")
TARGET = 1.05


def read_grid(path: Path) -> dict[tuple, dict[str, float]]:
    """The grid's rows: scenario (cluster, search, sigma, rho) -> mean makespan of each column of ``BASE``."""
    headers, rows = None, {}
    for line in path.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells and cells[0] == "cluster":
            headers = cells
            missing = [name for name in BASE if name not in headers]
            if missing:
                raise ValueError(f"{path}: the table has no column {missing[0]!r} (run allocation.py with "
                                 "--policies probe)")
        elif headers and cells[0] in CLUSTERS and len(cells) == len(headers):
            key = (cells[0], cells[1], float(cells[2]), float(cells[3]))
            rows[key] = {name: float(cell.split(" (")[0].replace(",", "")) for name, cell in zip(headers, cells)
                         if name in BASE}
    if not rows:
        raise ValueError(f"{path}: no rows of the grid found")
    return rows


def ratios(base: dict[str, float], told: dict[str, float]) -> dict[str, float]:
    """Each policy's makespan over the best fixed split's."""
    best = min(base[name] for name in BASE[:3])
    return {"auto + probe": base["auto + probe"] / best, **{name: value / best for name, value in told.items()}}


def _run(job: tuple) -> tuple:
    key, policy, seed = job
    cluster, strategy, sigma, rho = key
    truth = TRUTHS[policy]
    probe = None if truth.durations else dataclasses.replace(PROBE, continues="one")  # oracle-rho probes lengths
    outcome = simulate_search(grid_scenario(strategy, sigma, rho), CLUSTERS[cluster], "auto", seed=seed,
                              probe=probe, truth=truth)
    return key, policy, seed, outcome.makespan


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="allocation-probe-continue-one", help="results/<base>.md: the grid run")
    parser.add_argument("--scenarios", choices=("all", "missed"), default="all",
                        help="missed: only those auto + probe misses by more than 5%%")
    parser.add_argument("--policies", default="oracle,oracle-rho", help="comma separated: oracle, oracle-rho")
    parser.add_argument("--seeds", type=int, default=3, help="the base grid's (default 3)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cache", default="", help="a JSON-lines file of finished runs: read, extended, never rerun")
    parser.add_argument("--output", default="allocation-oracle")
    args = parser.parse_args(argv)
    policies = [name for name in args.policies.split(",") if name]
    unknown = [name for name in policies if name not in TRUTHS]
    if unknown:
        parser.error(f"unknown policy {unknown[0]!r} (choose from {', '.join(TRUTHS)})")
    base = read_grid(RESULTS / f"{args.base}.md")
    missed = [key for key, row in base.items() if ratios(row, {})["auto + probe"] > TARGET]
    keys = missed + ([key for key in base if key not in missed] if args.scenarios == "all" else [])
    done: dict[tuple, float] = {}
    cache = Path(args.cache) if args.cache else None
    if cache is not None and cache.exists():
        for line in cache.read_text().splitlines():
            key, policy, seed, makespan = json.loads(line)
            done[(tuple(key), policy, seed)] = makespan
    groups = (missed, keys[len(missed):])  # the missed scenarios first, every policy, then the others
    jobs = [(key, policy, seed) for group in groups for policy in policies for key in group
            for seed in range(args.seeds) if (key, policy, seed) not in done]
    with multiprocessing.Pool(args.workers) as pool:
        for key, policy, seed, makespan in pool.imap_unordered(_run, jobs):
            done[(key, policy, seed)] = makespan
            print(f"{key} {policy} seed {seed}: {makespan:,.0f} s", flush=True)
            if cache is not None:
                with cache.open("a") as handle:
                    handle.write(json.dumps([key, policy, seed, makespan]) + "\n")
    report = Report(args.output, "Where auto loses: the planner's share and the information's",
                    command_line(argv, "allocation_oracle_split.py"))
    report.add(
        f"The grid of `results/{args.base}.md` (its fixed splits and `auto + probe`: the planner after the scaling "
        f"probe, as the gang worker runs it, `--continues one`), {len(keys)} of its scenarios"
        + (" (those `auto + probe` misses by more than 5%)" if args.scenarios == "missed" else "")
        + f", {args.seeds} seeds each, the same durations. `oracle`: the same planner and decision "
        "(`nas.allocation.decide`) told the truth: the true efficiency per gang size, the durations' true median and "
        "spread, every asked candidate's own length (`Pending.known`, `Pending.probes`) and every running one's "
        "exact time left; no probe, none paid (candidates not asked yet are drawn from the true distribution). "
        "`oracle-rho`: told the true efficiency only; durations learned as `auto + probe` learns them (its "
        "one-device probes, paid alike; no wide probe). Ratios: mean makespan / the best fixed split's. Planner: "
        "`oracle - 1`; efficiency unknown: `auto + probe - oracle-rho`; durations unknown: `oracle-rho - oracle` "
        f"(in units of the best fixed split); budget: what the information may cost for `auto` to stay within "
        f"{TARGET - 1:.0%}, `{TARGET:g} - oracle`.")
    rows, complete = [], {}
    for key in keys:
        told = {policy: statistics.mean(done[(key, policy, s)] for s in range(args.seeds)) for policy in policies
                if all((key, policy, s) in done for s in range(args.seeds))}
        ratio = ratios(base[key], told)
        complete[key] = ratio
        best = min(BASE[:3], key=lambda name: base[key][name])
        cell = {name: f"{ratio[name]:.3f}" if name in ratio else "-" for name in ("auto + probe", *TRUTHS)}
        split = {"planner": "-", "efficiency unknown": "-", "durations unknown": "-", "budget": "-"}
        if "oracle" in ratio:
            split["planner"] = f"{ratio['oracle'] - 1:+.3f}"
            split["budget"] = f"{TARGET - ratio['oracle']:+.3f}"
        if "oracle-rho" in ratio:
            split["efficiency unknown"] = f"{ratio['auto + probe'] - ratio['oracle-rho']:+.3f}"
            if "oracle" in ratio:
                split["durations unknown"] = f"{ratio['oracle-rho'] - ratio['oracle']:+.3f}"
        rows.append([key[0], key[1], f"{key[2]:g}", f"{key[3]:g}", best, *cell.values(), *split.values()])
    report.add("## Every scenario\n\n" + table(
        ["cluster", "search", "sigma", "rho", "best fixed", "auto + probe", *TRUTHS, "planner", "efficiency unknown",
         "durations unknown", "budget"], rows))
    report.add("## Per policy\n\n" + table(
        ["policy", "scenarios", "worst ratio", "where", "mean ratio", "within 5%"],
        [_summary(name, complete) for name in ("auto + probe", *TRUTHS) if any(name in r for r in complete.values())]))
    if missed and all(set(TRUTHS) <= set(complete[key]) for key in missed):
        parts = {"planner (oracle - 1)": [complete[key]["oracle"] - 1 for key in missed],
                 "efficiency unknown": [complete[key]["auto + probe"] - complete[key]["oracle-rho"] for key in missed],
                 "durations unknown": [complete[key]["oracle-rho"] - complete[key]["oracle"] for key in missed],
                 "information (auto + probe - oracle)": [complete[key]["auto + probe"] - complete[key]["oracle"]
                                                         for key in missed],
                 f"budget ({TARGET:g} - oracle)": [TARGET - complete[key]["oracle"] for key in missed]}
        report.add(f"## The {len(missed)} scenarios `auto + probe` misses: its loss split\n\n" + table(
            ["share", "mean", "largest", "smallest"],
            [[name, f"{statistics.mean(v):+.3f}", f"{max(v):+.3f}", f"{min(v):+.3f}"] for name, v in parts.items()]))


def _summary(name: str, complete: dict[tuple, dict[str, float]]) -> list[str]:
    values = {key: ratio[name] for key, ratio in complete.items() if name in ratio}
    worst = max(values, key=values.get)
    return [name, str(len(values)), f"{values[worst]:.3f}",
            f"{worst[0]}, {worst[1]}, sigma {worst[2]:g}, rho {worst[3]:g}", f"{statistics.mean(values.values()):.3f}",
            f"{sum(v <= TARGET for v in values.values())} of {len(values)}"]


if __name__ == "__main__":
    main()
