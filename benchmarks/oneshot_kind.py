"""A digits ``oneshot`` search through the kind, end to end on the real stack (Redis, the control worker, one CPU
evaluation worker, SQLite): the device-seconds the system records for each phase, and the path search's
throughput and engine overhead per path.

- **device-s per phase**: the sum of the measured ``duration`` of the phase's individuals (the worker's time on
  the evaluation: supernet training, each path's scoring, each check path's stand-alone training and supernet
  score, each final run), as the search's page and CSV record them; with one slot, the wall span of each phase
  (first dispatch to last result) beside it.
- **paths/s per worker**: scored paths / the path phase's span, one slot.
- **engine overhead per path**: wall per path (span x slots / paths) - the worker's scoring time per path
  (recalibration + validation), as in ``benchmarks/oneshot_engine.py``; the issue asks for under 5%.

Run from the repository root::

    nice .venv/bin/python benchmarks/oneshot_kind.py --seed 0
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.oneshot_engine import path_costs  # noqa: E402
from benchmarks.report import Report, command_line, table  # noqa: E402
from benchmarks.stack import Stack, equal_nodes, main_guard  # noqa: E402

PHASES = [("supernet", "supernet"), ("search", "path search"), ("check", "ranking check"), ("final", "final")]


def config(pool: str, args: argparse.Namespace) -> dict:
    return {"kind": "oneshot", "dataset": "digits", "space": {"name": "cell", "cells_per_stage": args.cells,
                                                              "stages": args.stages, "channels": args.channels},
            "pool": pool,
            "training": {"epochs": args.check_epochs, "seed": args.seed},
            "oneshot": {"supernet": {"epochs": args.supernet_epochs, "learning_rate": args.supernet_lr,
                                     "probes": args.probes},
                        "strategy": {"name": "regularized", "seed": args.seed,
                                     "params": {"population": 20, "sample_size": 3,
                                                "max_evaluations": args.paths}},
                        "check_ranking": args.check},
            "final": {"top": 1, "epochs": args.final_epochs}}


def phase_costs(search_id: int) -> dict[str, dict[str, float]]:
    """Per role: individuals done, the sum of their recorded durations, and the phase's wall span."""
    from webapp.searches.models import Individual

    costs = {}
    for role, _ in PHASES:
        rows = list(Individual.objects.filter(search_id=search_id, role=role, status=Individual.Status.DONE)
                    .values("duration", "dispatched", "finished"))
        span = (max(r["finished"] for r in rows) - min(r["dispatched"] for r in rows)).total_seconds() \
            if rows else 0.0
        costs[role] = {"count": len(rows), "device": sum(r["duration"] or 0.0 for r in rows), "span": span}
    return costs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cells", type=int, default=1, help="cells per stage (benchmarks/oneshot.py's space)")
    parser.add_argument("--stages", type=int, default=2)
    parser.add_argument("--channels", type=int, default=16)
    parser.add_argument("--supernet-epochs", type=int, default=20)
    parser.add_argument("--supernet-lr", type=float, default=0.003)
    parser.add_argument("--probes", type=int, default=2)
    parser.add_argument("--paths", type=int, default=60)
    parser.add_argument("--check", type=int, default=20)
    parser.add_argument("--check-epochs", type=int, default=2, help="the stand-alone budget of the check's paths")
    parser.add_argument("--final-epochs", type=int, default=15)
    parser.add_argument("--output", default="oneshot-kind")
    args = parser.parse_args(argv)
    report = Report(args.output, "A digits one-shot search through the kind: device-seconds per phase",
                    command_line(argv, "oneshot_kind.py"))
    with Stack() as stack:
        with stack.workers(equal_nodes(1, 1)) as pool:
            done = stack.run_search(f"oneshot kind seed {args.seed}", config(pool, args))
        if done.status != "finished":
            raise SystemExit(f"the search ended {done.status}")
        from webapp.searches.models import Search

        search = Search.objects.get(pk=done.search_id)
        costs = phase_costs(done.search_id)
        paths = path_costs(done.search_id)
        ranking = (search.stats.get("oneshot") or {}).get("ranking") or {}
    total = sum(c["device"] for c in costs.values())
    rows = [[label, str(costs[role]["count"]), f"{costs[role]['device']:.1f}",
             f"{100 * costs[role]['device'] / total:.1f}%", f"{costs[role]['span']:.1f}"] for role, label in PHASES]
    no_check = total - costs["check"]["device"]
    rows.append(["all phases", "", f"{total:.1f}", "100%", f"{done.wall:.1f} (search wall)"])
    rows.append(["all but the ranking check", "", f"{no_check:.1f}", f"{100 * no_check / total:.1f}%", ""])
    per_path = paths["span"] / paths["paths"]
    overhead = per_path - paths["scoring"]
    tau = ranking.get("tau")
    tau_text = (f"{tau:.2f} [{ranking['low']:.2f}, {ranking['high']:.2f}] (n={ranking['n']})"
                if tau is not None and ranking.get("low") is not None else str(ranking.get("tau")))
    report.add(
        f"Cell space ({args.cells} cell(s) per stage, {args.stages} stages, {args.channels} channels: "
        f"benchmarks/oneshot.py's) on digits, seed {args.seed}; one CPU evaluation worker (one slot). Supernet "
        f"{args.supernet_epochs} epochs (lr {args.supernet_lr}, {args.probes} probe paths per epoch); regularized "
        f"over {args.paths} paths (population 20, tournament 3); ranking check {args.check} paths x "
        f"{args.check_epochs} epochs stand-alone; final: top 1 x {args.final_epochs} epochs. Device-s: the sum of "
        "the durations the system records for each phase's individuals (the worker's wall time on each "
        "evaluation, under whatever else the machine ran); span: first dispatch to last result of the phase.\n\n"
        f"Search {search.status}: final model accuracy {100 * (search.best_fitness or 0):.2f}%, ranking check "
        f"tau {tau_text}.\n\n"
        + table(["phase", "individuals", "device-s", "share", "span, s"], rows)
        + "\n\n## Path search, per worker\n\n"
        + table(["paths", "paths/s (1 slot)", "scoring per path, ms", "wall per path, ms", "engine overhead, ms",
                 "overhead / scoring"],
                [[str(paths["paths"]), f"{paths['paths'] / paths['span']:.2f}", f"{1000 * paths['scoring']:.1f}",
                  f"{1000 * per_path:.1f}", f"{1000 * overhead:.1f}", f"{100 * overhead / paths['scoring']:.1f}%"]]))


if __name__ == "__main__":
    main_guard(main)
