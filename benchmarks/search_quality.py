"""Search quality of every strategy at an equal evaluation budget, on cheap synthetic fitness functions.

Each space gets a fitness in [0, 1] with a known optimum of 1 at a hidden target genome drawn per seed:

- pelee: 1 - the mean distance of the 12 genes to the target's, each normalised by its range;
- chain: the target is a module of ``max_layers`` layers (the space's mutation only appends layers until the
  module is full, then replaces one, so a shorter target would be reachable by sampling alone); each position
  scores 1/2 for the kernel and up to 1/2 for the filters (by distance in the choice list); absent layers 0;
- cell: the fraction of the 6 edges whose op matches the target's.

Evaluations are asynchronous: ``--workers`` simulated workers, each taking a random duration per candidate,
ask for work as they free up (so the generational strategies meet their barrier, and results arrive out of
order). The single-objective strategies maximise the fitness; NSGA-II gets two objectives, the fitness (max)
and a size proxy (min: pelee's ways x layers x growth, chain's kernel^2 x filters, cell's conv weights), and is
scored by the best fitness it found. Run from the repository root::

    python benchmarks/search_quality.py --seeds 20 --budget 200
"""
from __future__ import annotations

import argparse
import heapq
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nas.spaces import get_space  # noqa: E402
from nas.spaces.base import Genome, SearchSpace  # noqa: E402
from nas.spaces.cell import EDGES  # noqa: E402
from nas.spaces.chain import FILTERS, LAYERS  # noqa: E402
from nas.strategies import Result, Strategy, get_strategy  # noqa: E402

Scorer = Callable[[Genome], tuple[float, float]]  # genome -> (fitness, size)


def pelee_scorer(space: SearchSpace, rng: np.random.Generator) -> Scorer:
    target = space.sample(rng)["stages"]
    genes = [list(space.ways), list(range(space.layers[0], space.layers[1] + 1)), list(space.growth)]

    def score(genome: Genome) -> tuple[float, float]:
        gaps = [
            abs(choices.index(value) - choices.index(goal)) / max(len(choices) - 1, 1)
            for stage, goal_stage in zip(genome["stages"], target)
            for value, goal, choices in zip(stage, goal_stage, genes)
        ]
        return 1 - sum(gaps) / len(gaps), float(sum(w * n * g for w, n, g in genome["stages"]))

    return score


def chain_scorer(space: SearchSpace, rng: np.random.Generator) -> Scorer:
    target = [LAYERS[int(i)] for i in rng.integers(len(LAYERS), size=space.max_layers)]

    def layer_score(layer: dict, goal: dict) -> float:
        filters = 1 - abs(FILTERS.index(layer["filters"]) - FILTERS.index(goal["filters"])) / (len(FILTERS) - 1)
        return 0.5 * (layer["kernel"] == goal["kernel"]) + 0.5 * filters

    def score(genome: Genome) -> tuple[float, float]:
        layers = genome["layers"]
        fitness = sum(layer_score(layer, goal) for layer, goal in zip(layers, target)) / len(target)
        return fitness, float(sum(layer["kernel"] ** 2 * layer["filters"] for layer in layers))

    return score


def cell_scorer(space: SearchSpace, rng: np.random.Generator) -> Scorer:
    target = space.sample(rng)["edges"]
    weight = {"conv_3x3": 9.0, "conv_1x1": 1.0}

    def score(genome: Genome) -> tuple[float, float]:
        edges = genome["edges"]
        matches = sum(edges[edge] == target[edge] for edge in EDGES)
        return matches / len(EDGES), sum(weight.get(op, 0.0) for op in edges.values())

    return score


SCORERS = {"pelee": pelee_scorer, "chain": chain_scorer, "cell": cell_scorer}


def make_strategy(name: str, space: SearchSpace, seed: int, budget: int) -> Strategy:
    """Each strategy with its defaults, its budget set to exactly ``budget`` evaluations."""
    if name in ("generational", "nsga2"):
        extra = {"generations": None}
        if name == "nsga2":
            extra["objectives"] = [["fitness", "max"], ["size", "min"]]
        return get_strategy(name, space, seed, max_evaluations=budget, **extra)
    return get_strategy(name, space, seed, max_evaluations=budget)


def simulate(strategy: Strategy, score: Scorer, workers: int, seed: int) -> tuple[float, int]:
    """Run to ``done`` with ``workers`` simulated workers; the best fitness found and the evaluations made."""
    durations = np.random.default_rng(seed + 1_000_003)
    clock, busy, best, evaluations = 0.0, [], -1.0, 0
    while not strategy.done:
        for candidate in strategy.ask(workers - len(busy)):
            heapq.heappush(busy, (clock + durations.uniform(0.5, 1.5), candidate.id, candidate))
        if not busy:  # the strategy found its space exhausted during that ask
            break
        clock, _, candidate = heapq.heappop(busy)
        fitness, size = score(candidate.genome)
        strategy.tell(candidate.id, Result(fitness=fitness, objectives={"fitness": fitness, "size": size}))
        best, evaluations = max(best, fitness), evaluations + 1
    return best, evaluations


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20, help="independent runs per space and strategy (default 20)")
    parser.add_argument("--budget", type=int, default=200, help="evaluations per run (default 200)")
    parser.add_argument("--workers", type=int, default=4, help="simulated asynchronous workers (default 4)")
    parser.add_argument("--spaces", default="pelee,chain,cell", help="comma-separated spaces (default all three)")
    parser.add_argument(
        "--strategies", default="random,generational,regularized,nsga2",
        help="comma-separated strategies; random is the reference for the last column (default all four)",
    )
    args = parser.parse_args(argv)
    strategies = args.strategies.split(",")
    started = time.perf_counter()
    print(f"{args.seeds} seeds, {args.budget} evaluations each, {args.workers} asynchronous workers; optimum = 1\n")
    print("| space | strategy | mean best | std | min | max | optimum found | evaluations | beats random (ties) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for space_name in args.spaces.split(","):
        space = get_space(space_name)
        bests: dict[str, list[float]] = {}
        for name in strategies:
            runs = []
            for seed in range(args.seeds):
                score = SCORERS[space_name](space, np.random.default_rng([seed, 99]))  # same target for all
                runs.append(simulate(make_strategy(name, space, seed, args.budget), score, args.workers, seed))
            bests[name] = [best for best, _ in runs]
            values = bests[name]
            versus = "—"
            if "random" in bests and name != "random":
                wins = sum(b > r + 1e-12 for b, r in zip(values, bests["random"]))
                ties = sum(abs(b - r) <= 1e-12 for b, r in zip(values, bests["random"]))
                versus = f"{wins}/{len(values)} ({ties})"
            print(
                f"| {space_name} | {name} | {statistics.mean(values):.3f} | {statistics.pstdev(values):.3f} | "
                f"{min(values):.3f} | {max(values):.3f} | {sum(v >= 1 - 1e-12 for v in values)}/{len(values)} | "
                f"{statistics.mean(e for _, e in runs):.0f} | {versus} |"
            )
    print(f"\n({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
