"""Heterogeneous evaluation nodes (seed 000's Sec. 4.3 and Fig. 7): four nodes, one at half speed, against four
equal nodes and three equal nodes.

Each node is one evaluation worker process with one slot (``manage.py evalworker --slots 1``); the slow one
runs with ``NAS_SIM_SLOWDOWN=2`` (each of its evaluations takes twice as long). Workers pull their next packet
only when free, so the slow node should evaluate about half as many individuals as each fast one, and the
search's wall time should fall between the four-equal and the three-equal times (seed 000: 29.53 h between
26.36 h and 32.7 h). Printed: per-node counts and busy time, total individuals and wall time per cluster.
Run from the repository root::

    python benchmarks/heterogeneous.py --strategy generational --duration 0.5
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report import Report, command_line, table  # noqa: E402
from benchmarks.speedup import strategy_params  # noqa: E402
from benchmarks.stack import Node, Run, Stack, main_guard, simulated_config  # noqa: E402


def clusters(slowdown: float) -> dict[str, list[Node]]:
    fast = [Node(f"node{i}") for i in range(2, 5)]
    return {
        "4 equal nodes": [Node("node1"), *fast],
        f"4 nodes, node1 {slowdown:g}x slower": [Node("node1", slowdown=slowdown), *fast],
        "3 equal nodes": fast,
    }


def node_rows(cluster: str, run: Run) -> list[list[str]]:
    rows = []
    for node in run.summary["nodes"]:
        rows.append([cluster, node["node"], str(node["count"]), f"{node['busy']:.1f}",
                     f"{node['busy'] / max(node['count'], 1):.2f}", f"{node['busy'] / run.engine_wall:.2f}"])
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--strategy", default="generational", choices=("generational", "regularized"))
    parser.add_argument("--duration", type=float, default=0.5, help="seconds per evaluation (default 0.5)")
    parser.add_argument("--distribution", default="fixed", choices=("fixed", "lognormal", "uniform"))
    parser.add_argument("--sigma", type=float, default=0.5)
    parser.add_argument("--slowdown", type=float, default=2.0, help="how much slower node1 is (default 2)")
    parser.add_argument("--evaluations", type=int, default=200, help="regularized: evaluations (default 200)")
    parser.add_argument("--population", type=int, default=20)
    parser.add_argument("--generations", type=int, default=20)
    parser.add_argument("--space", default="pelee", choices=("pelee", "chain", "cell"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="heterogeneous", help="results/<output>.md (default heterogeneous)")
    args = parser.parse_args(argv)
    report = Report(args.output, "Heterogeneous nodes: one slow node among four (seed 000's Fig. 7)",
                    command_line(argv, "heterogeneous.py"))
    report.add(f"Strategy {args.strategy}, simulated evaluations of {args.duration} s ({args.distribution}), "
               f"space {args.space}; one worker process with one slot per node. Measured under whatever else the "
               "machine was running (see the load average above).")
    runs: dict[str, Run] = {}
    with Stack() as stack:
        for name, nodes in clusters(args.slowdown).items():
            with stack.workers(nodes) as pool:
                config = simulated_config(pool, args.strategy, strategy_params(args.strategy, args),
                                          duration=args.duration, distribution=args.distribution, sigma=args.sigma,
                                          space=args.space, seed=args.seed)
                runs[name] = stack.run_search(f"heterogeneous: {name}", config)
            print(f"  {name}: {runs[name].status}, T {runs[name].wall:.1f} s", flush=True)
    report.add("## Per cluster\n\n" + table(
        ["cluster", "total individuals", "wall time, s", "engine wall, s", "speedup serial / wall"],
        [[name, str(run.summary["done"] + run.summary["failed"]), f"{run.wall:.1f}", f"{run.engine_wall:.1f}",
          f"{run.summary['speedup']:.2f}"] for name, run in runs.items()]))
    report.add("## Per node (Fig. 7)\n\n" + table(
        ["cluster", "node", "individuals evaluated", "busy, s", "s per evaluation", "busy / wall"],
        [row for name, run in runs.items() for row in node_rows(name, run)]))


if __name__ == "__main__":
    main_guard(main)
