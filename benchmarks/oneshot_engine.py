"""The engine's cost per path in a one-shot search's path search, on the real stack (Redis, the control worker,
CPU evaluation workers): the time a worker spends scoring a path with the supernet's weights (batch-norm
statistics recomputed, then validation) against the wall time per path of the whole path phase (the strategy
asked, the individual created, its packet signed and sent, the worker's messages recorded, the strategy told).

    engine overhead per path = wall per path (phase span x slots / paths) - scoring time per path

The supernet is trained for a few epochs first (its training is not measured here: see ``benchmarks/oneshot.py``).
Run from the repository root::

    python benchmarks/oneshot_engine.py --paths 200 --workers 1
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report import Report, command_line, table  # noqa: E402
from benchmarks.stack import Stack, equal_nodes, main_guard  # noqa: E402


def config(pool: str, paths: int, epochs: int, seed: int) -> dict:
    return {"kind": "oneshot", "space": {"name": "cell"}, "dataset": "digits", "pool": pool,
            "training": {"epochs": 1, "seed": seed},
            "oneshot": {"supernet": {"epochs": epochs, "probes": 1},
                        "strategy": {"name": "regularized", "seed": seed,
                                     "params": {"population": 20, "sample_size": 5, "max_evaluations": paths}}}}


def path_costs(search_id: int) -> dict[str, float]:
    """Per path of the search: its scoring seconds (worker), and the wall time per path of the phase."""
    from webapp.searches.models import Individual

    rows = list(Individual.objects.filter(search_id=search_id, role=Individual.Role.SEARCH,
                                          status=Individual.Status.DONE)
                .values("metrics", "dispatched", "started", "finished", "duration"))
    scoring = [r["metrics"]["timings"]["calibrate"] + r["metrics"]["timings"]["validate"] for r in rows]
    on_worker = [r["duration"] for r in rows]
    span = (max(r["finished"] for r in rows) - min(r["dispatched"] for r in rows)).total_seconds()
    return {"paths": len(rows), "scoring": statistics.fmean(scoring), "on_worker": statistics.fmean(on_worker),
            "span": span}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paths", type=int, default=200)
    parser.add_argument("--workers", default="1", help="slot counts, e.g. 1,2")
    parser.add_argument("--epochs", type=int, default=2, help="the supernet's epochs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    report = Report("oneshot_engine", "The engine's cost per path in a one-shot search's path search",
                    command_line(argv, "oneshot_engine.py"))
    report.add(f"Cell space (defaults) on digits, regularized evolution over {args.paths} paths, each scored with "
               f"a supernet trained {args.epochs} epochs; CPU workers (one slot each, OMP threads as the worker "
               "sets them). Scoring: the worker's batch-norm recalibration and validation per path; on the "
               "worker: the evaluation's measured duration (scoring plus the data and weights in the process); "
               "engine overhead: wall per path x slots - scoring. Measured under whatever else the machine ran.")
    rows = []
    with Stack() as stack:
        for workers in [int(n) for n in args.workers.split(",")]:
            with stack.workers(equal_nodes(workers, 16)) as pool:
                done = stack.run_search(f"oneshot engine n={workers}", config(pool, args.paths, args.epochs,
                                                                             args.seed))
            if done.status != "finished":
                report.add(f"{workers} slot(s): the search ended {done.status}")
                continue
            costs = path_costs(done.search_id)
            per_path = costs["span"] * workers / costs["paths"]
            overhead = per_path - costs["scoring"]
            rows.append([str(workers), str(costs["paths"]), f"{1000 * costs['scoring']:.1f}",
                         f"{1000 * costs['on_worker']:.1f}", f"{1000 * per_path:.1f}", f"{1000 * overhead:.1f}",
                         f"{100 * overhead / costs['scoring']:.1f}%", f"{costs['paths'] / costs['span']:.1f}"])
            print(f"  {workers} slot(s): {rows[-1]}", flush=True)
    report.add("## Per path\n\n" + table(
        ["slots", "paths", "scoring, ms", "on the worker, ms", "wall x slots per path, ms", "engine overhead, ms",
         "overhead / scoring", "paths per s"], rows))


if __name__ == "__main__":
    main_guard(main)
