"""Search quality of every strategy at an equal evaluation budget: mean best and its standard error over seeds,
against random search, on cheap synthetic fitness functions and on real digits training.

**Landscapes.** Each space gets a fitness in [0, 1] with a known optimum of 1 at a hidden target genome drawn
per seed (the same target for every strategy):

- pelee: 1 - the mean distance of the 12 genes to the target's, each normalised by its range;
- chain: the target is a module of ``max_layers`` layers (the space's mutation only appends layers until the
  module is full, then replaces one, so a shorter target would be reachable by sampling alone); each position
  scores 1/2 for the kernel and up to 1/2 for the filters (by distance in the choice list); absent layers 0;
- cell: the fraction of the 6 edges whose op matches the target's.

**Digits.** Every chain architecture of at most 3 layers (2 modules: 584 genomes) really trained on digits with
PyTorch once (CPU, one thread per process, ``--digits-epochs`` epochs, the training seed fixed, so the accuracy
is what any run asking for that architecture would get), a tabular benchmark as NAS-Bench-201 is: the table is
saved (``results/search_quality-digits.json``) and read by the next runs. Then ``--digits-seeds`` runs of
``--digits-budget`` evaluations per strategy look their fitness (the validation accuracy) up in it; "optimum
found" counts the runs that found the best of all 584.

Evaluations are asynchronous: ``--workers`` simulated workers, each taking a random duration per candidate,
ask for work as they free up (so the generational strategies meet their barrier, and results arrive out of
order). The single-objective strategies maximise the fitness; NSGA-II gets two objectives, the fitness (max)
and a size proxy (min: pelee's ways x layers x growth, chain's kernel^2 x filters, cell's conv weights), and is
scored by the best fitness it found. "Beats random" compares mean bests: the difference, its standard error
(both strategies' standard errors combined), and whether the difference exceeds it. Runs go to ``--jobs``
processes. Run from the repository root::

    .venv/bin/python benchmarks/search_quality.py --seeds 20 --budget 150 --digits-seeds 20 --digits-budget 40
"""
from __future__ import annotations

import argparse
import concurrent.futures
import heapq
import itertools
import json
import math
import multiprocessing
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report import RESULTS, Report, command_line, table  # noqa: E402
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
DIGITS_TRAINING = {"batch_size": 64, "learning_rate": 0.002, "seed": 1}
#: Every genome of the digits space trained once (written by the first run, read by the next ones).
DIGITS_TABLE = RESULTS / "search_quality-digits.json"


def every_chain_genome(space: SearchSpace) -> list[Genome]:
    return [{"layers": [dict(layer) for layer in layers]} for count in range(space.min_layers, space.max_layers + 1)
            for layers in itertools.product(LAYERS, repeat=count)]


def train_digits(task: tuple[Genome, int]) -> tuple[float, float, float]:
    """Validation accuracy (0 for a failure), parameters and seconds of one genome trained on digits."""
    genome, epochs = task
    import torch

    from evaluators.evaluate import evaluate

    torch.set_num_threads(1)
    started = time.perf_counter()
    result = evaluate(genome, DIGITS_SPACE, {**DIGITS_TRAINING, "epochs": epochs}, "digits", "cpu")
    return result.fitness or 0.0, float(result.metrics.get("params") or 0.0), time.perf_counter() - started


def digits_table(path: Path, epochs: int, jobs: int) -> dict[str, Any]:
    """Every genome of the digits space trained once, ``{"accuracy": {key: [accuracy, params]}, ...}``: read
    from ``path`` when it holds this space and budget, else trained on ``jobs`` processes and written there.
    Training is seeded, so the table is what each strategy's run would have trained (as NAS-Bench-201 is)."""
    if path.exists():
        saved = json.loads(path.read_text())
        if (saved["space"], saved["training"]) == (DIGITS_SPACE, {**DIGITS_TRAINING, "epochs": epochs}):
            return saved
    space = space_from_config(DIGITS_SPACE)
    genomes = every_chain_genome(space)
    started = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        trained = list(pool.map(train_digits, [(genome, epochs) for genome in genomes], chunksize=4))
    saved = {"space": DIGITS_SPACE, "training": {**DIGITS_TRAINING, "epochs": epochs},
             "seconds": round(time.perf_counter() - started), "cpu_seconds": round(sum(t for _, _, t in trained)),
             "accuracy": {space.key(g): [round(a, 6), p] for g, (a, p, _) in zip(genomes, trained)}}
    path.write_text(json.dumps(saved, indent=0) + "\n")
    return saved


def run(task: tuple[str, str, int, int, int]) -> tuple[float, int]:
    """One run on a landscape: ``(landscape, strategy, seed, budget, workers)`` -> (best, evaluations)."""
    landscape, name, seed, budget, workers = task
    space = get_space(landscape)
    score = SCORERS[landscape](space, np.random.default_rng([seed, 99]))  # the same target for all
    return simulate(make_strategy(name, space, seed, budget), score, workers, seed)


def digits_runs(table: dict[str, Any], names: str, seeds: int, budget: int, workers: int) -> dict[str, list]:
    space = space_from_config(DIGITS_SPACE)

    def score(genome: Genome) -> tuple[float, float]:
        accuracy, params = table["accuracy"][space.key(genome)]
        return accuracy, params

    return {name: [simulate(make_strategy(name, space, seed, budget), score, workers, seed) for seed in range(seeds)]
            for name in names.split(",")}


def describe_table(table: dict[str, Any]) -> str:
    accuracies = sorted((a for a, _ in table["accuracy"].values()), reverse=True)
    best = accuracies[0]
    return (f"The {len(accuracies)} architectures trained in {table['seconds']} s ({table['cpu_seconds']} s of "
            f"training): best {best:.4f}, {sum(a >= best - 0.005 for a in accuracies)} within 0.005 of it, "
            f"{sum(a >= best - 0.02 for a in accuracies)} within 0.02, median {statistics.median(accuracies):.3f}, "
            f"{sum(a < 0.2 for a in accuracies)} near chance (below 0.2).")


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
    parser.add_argument("--digits-seeds", type=int, default=20, help="runs per strategy on digits (0: skip; default 20)")
    parser.add_argument("--digits-budget", type=int, default=40, help="evaluations per digits run (default 40)")
    parser.add_argument("--digits-table", default=str(DIGITS_TABLE),
                        help="the trained architectures: read if it holds this budget, else trained and written")
    parser.add_argument("--digits-epochs", type=int, default=1, help="epochs per digits architecture (default 1)")
    parser.add_argument("--digits-strategies", default="random,regularized,reinforce,tpe")
    parser.add_argument("--jobs", type=int, default=2, help="processes running the runs (default 2)")
    parser.add_argument("--output", default="search_quality")
    args = parser.parse_args(argv)
    report = Report(args.output, "Search quality: every strategy against random search at equal budgets",
                    command_line(argv, "search_quality.py"))
    started = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        rows = []
        for landscape in args.spaces.split(","):
            runs = {name: list(pool.map(run, [(landscape, name, seed, args.budget, args.workers)
                                              for seed in range(args.seeds)])) for name in args.strategies.split(",")}
            rows += summarise(landscape, runs, 1.0)
    report.add(f"## Landscapes\n\n{args.seeds} seeds x {args.budget} evaluations on each landscape (optimum 1), "
               f"{args.workers} asynchronous workers ({time.perf_counter() - started:.0f} s on {args.jobs} "
               f"processes).\n\n" + table(HEADERS, rows))
    if args.digits_seeds:
        found = digits_table(Path(args.digits_table), args.digits_epochs, args.jobs)
        best = max(a for a, _ in found["accuracy"].values())
        runs = digits_runs(found, args.digits_strategies, args.digits_seeds, args.digits_budget, args.workers)
        report.add(f"## Real digits training\n\nEvery chain architecture of at most 3 layers (2 modules) trained "
                   f"{args.digits_epochs} epoch(s) on digits once (CPU, one thread per process, seeded: "
                   f"`{Path(args.digits_table).name}`), then {args.digits_seeds} seeds x {args.digits_budget} "
                   f"evaluations per strategy, {args.workers} asynchronous workers; \"optimum found\": the best "
                   f"of all {len(found['accuracy'])}. {describe_table(found)}\n\n"
                   + table(HEADERS, summarise("digits", runs, best)))


if __name__ == "__main__":
    main()
