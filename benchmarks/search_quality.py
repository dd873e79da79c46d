"""Search quality of every strategy at an equal evaluation budget: mean best and its standard error over seeds,
against random search, on cheap synthetic fitness functions and on real digits training.

**Landscapes.** Each space gets a fitness in [0, 1] with a known optimum of 1 at a hidden target genome drawn
per seed (the same target for every strategy):

- pelee: 1 - the mean distance of the 12 genes to the target's, each normalised by its range;
- chain: the target is a module of ``max_layers`` layers (the space's mutation only appends layers until the
  module is full, then replaces one, so a shorter target would be reachable by sampling alone); each position
  scores 1/2 for the kernel and up to 1/2 for the filters (by distance in the choice list); absent layers 0;
- cell: the fraction of the 6 edges whose op matches the target's.

**Digits.** ``--digits-budget`` chain architectures (at most 3 layers, 2 modules: 584 genomes) per run, each
really trained on digits with PyTorch (CPU, one thread, ``--digits-epochs`` epochs, training seed fixed, so an
architecture's accuracy is the same whoever asks: each process trains a genome once and remembers it); the
fitness is its validation accuracy. No hidden optimum here.

Evaluations are asynchronous: ``--workers`` simulated workers, each taking a random duration per candidate,
ask for work as they free up (so the generational strategies meet their barrier, and results arrive out of
order). The single-objective strategies maximise the fitness; NSGA-II gets two objectives, the fitness (max)
and a size proxy (min: pelee's ways x layers x growth, chain's kernel^2 x filters, cell's conv weights), and is
scored by the best fitness it found. "Beats random" compares mean bests: the difference, its standard error
(both strategies' standard errors combined), and whether the difference exceeds it. Runs go to ``--jobs``
processes. Run from the repository root::

    .venv/bin/python benchmarks/search_quality.py --seeds 20 --budget 150 --digits-seeds 8 --digits-budget 40
"""
from __future__ import annotations

import argparse
import concurrent.futures
import functools
import heapq
import math
import multiprocessing
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report import Report, command_line, table  # noqa: E402
from nas.spaces import get_space, space_from_config  # noqa: E402
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


DIGITS_SPACE = {"name": "chain", "max_layers": 3, "modules": 2}
_trained: dict[str, tuple[float, float]] = {}  # genome key -> (accuracy, parameters), per process


def digits_score(genome: Genome, epochs: int) -> tuple[float, float]:
    """Validation accuracy (0 for a failure) and parameters of ``genome`` trained on digits, once per process."""
    space = space_from_config(DIGITS_SPACE)
    key = space.key(genome)
    if key not in _trained:
        import torch

        from evaluators.evaluate import evaluate

        torch.set_num_threads(1)
        result = evaluate(genome, DIGITS_SPACE, {"epochs": epochs, "batch_size": 64, "learning_rate": 0.002,
                                                 "seed": 1}, "digits", "cpu")
        _trained[key] = (result.fitness or 0.0, float(result.metrics.get("params") or 0.0))
    return _trained[key]


def run(task: tuple[str, str, int, int, int, int]) -> tuple[float, int]:
    """One run: ``(landscape, strategy, seed, budget, workers, digits epochs)`` -> (best, evaluations)."""
    landscape, name, seed, budget, workers, epochs = task
    if landscape == "digits":
        space = space_from_config(DIGITS_SPACE)
        score: Scorer = functools.partial(digits_score, epochs=epochs)
    else:
        space = get_space(landscape)
        score = SCORERS[landscape](space, np.random.default_rng([seed, 99]))  # the same target for all
    return simulate(make_strategy(name, space, seed, budget), score, workers, seed)


def summarise(landscape: str, runs: dict[str, list[tuple[float, int]]], optimum: float | None) -> list[list[str]]:
    """A table row per strategy: mean best +- s.e., min, max, optima found, evaluations, against random."""
    rows = []
    base = [best for best, _ in runs.get("random", [])]
    for name, found in runs.items():
        bests = [best for best, _ in found]
        mean, se = statistics.mean(bests), statistics.stdev(bests) / math.sqrt(len(bests))
        versus, beats = "—", "—"
        if base and name != "random":
            gap = mean - statistics.mean(base)
            gap_se = math.hypot(se, statistics.stdev(base) / math.sqrt(len(base)))
            versus, beats = f"{gap:+.3f} ± {gap_se:.3f}", "yes" if gap > gap_se else "no"
        hits = "—" if optimum is None else f"{sum(b >= optimum - 1e-12 for b in bests)}/{len(bests)}"
        rows.append([landscape, name, f"{mean:.3f} ± {se:.3f}", f"{min(bests):.3f}", f"{max(bests):.3f}", hits,
                     f"{statistics.mean(e for _, e in found):.0f}", versus, beats])
    return rows


HEADERS = ["landscape", "strategy", "mean best ± s.e.", "min", "max", "optimum found", "evaluations",
           "vs random (± s.e.)", "beats random by > 1 s.e."]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20, help="runs per landscape and strategy (default 20)")
    parser.add_argument("--budget", type=int, default=150, help="evaluations per run (default 150)")
    parser.add_argument("--workers", type=int, default=4, help="simulated asynchronous workers (default 4)")
    parser.add_argument("--spaces", default="pelee,chain,cell", help="comma-separated landscapes (default all three)")
    parser.add_argument("--strategies", default="random,generational,regularized,nsga2,reinforce,tpe",
                        help="comma-separated strategies; random is the reference (default all six)")
    parser.add_argument("--digits-seeds", type=int, default=8, help="runs per strategy on digits (0: skip; default 8)")
    parser.add_argument("--digits-budget", type=int, default=40, help="evaluations per digits run (default 40)")
    parser.add_argument("--digits-epochs", type=int, default=1, help="epochs per digits architecture (default 1)")
    parser.add_argument("--digits-strategies", default="random,regularized,reinforce,tpe")
    parser.add_argument("--jobs", type=int, default=2, help="processes running the runs (default 2)")
    parser.add_argument("--output", default="search_quality")
    args = parser.parse_args(argv)
    report = Report(args.output, "Search quality: every strategy against random search at equal budgets",
                    command_line(argv, "search_quality.py"))
    with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        def runs(landscape: str, names: str, seeds: int, budget: int) -> dict[str, list[tuple[float, int]]]:
            return {name: list(pool.map(run, [(landscape, name, seed, budget, args.workers, args.digits_epochs)
                                              for seed in range(seeds)])) for name in names.split(",")}

        started = time.perf_counter()
        rows = [row for landscape in args.spaces.split(",")
                for row in summarise(landscape, runs(landscape, args.strategies, args.seeds, args.budget), 1.0)]
        report.add(f"## Landscapes\n\n{args.seeds} seeds x {args.budget} evaluations on each landscape (optimum 1), "
                   f"{args.workers} asynchronous workers ({time.perf_counter() - started:.0f} s on {args.jobs} "
                   f"processes).\n\n" + table(HEADERS, rows))
        if args.digits_seeds:
            started = time.perf_counter()
            found = runs("digits", args.digits_strategies, args.digits_seeds, args.digits_budget)
            report.add(f"## Real digits training\n\n{args.digits_seeds} seeds x {args.digits_budget} evaluations of "
                       f"chain architectures (at most 3 layers, 2 modules) trained {args.digits_epochs} epoch(s) each "
                       f"on digits, {args.workers} asynchronous workers ({time.perf_counter() - started:.0f} s on "
                       f"{args.jobs} processes).\n\n" + table(HEADERS, summarise("digits", found, None)))


if __name__ == "__main__":
    main()
