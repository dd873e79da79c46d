"""One-shot (weight-sharing) search against regularized evolution with full per-candidate training, on the same
space, seeds and final training (issue 33's benchmark, engine part: one process, one CPU thread, no web stack).

- **evolution**: ``regularized`` over the cell space, each candidate trained stand-alone under the candidate
  budget (``--epochs``); its device-seconds are the sum of the candidates' evaluation times.
- **one-shot**: the supernet trained Single Path One-Shot style (``--supernet-epochs``, one uniformly sampled
  path per step), then ``regularized`` over paths with each path's fitness its supernet score (BN statistics
  recomputed per path on 512 training images, then validation accuracy); device-seconds: the supernet's
  training (with its per-epoch probes) and the path search.
- **final**: the best genome of each search retrained from scratch under the same final budget
  (``--final-epochs``, same training seed): the model a user gets.
- **ranking check**: ``--check`` random paths trained stand-alone under the candidate budget, against their
  supernet scores: Kendall's tau-b and its 95% interval (Fisher-type normal approximation, Fieller, Hartley &
  Pearson 1957: var(atanh tau) = 0.437 / (n - 4)).
- **path scoring**: paths per second on one CPU thread, and the per-path overhead (checking the path, restoring
  state: everything but recalibration and validation) against the per-path scoring time.

Device-seconds are this process's CPU seconds (``time.process_time``, one torch thread): on a shared machine
wall time would count the other processes' load.

Accuracies are on the validation split the searches select on (digits and synthetic have no other split here);
both searches share it, so the comparison is fair but both finals are optimistic. Run from the repository root::

    nice .venv/bin/python benchmarks/oneshot.py --evaluations 50 --check-epochs 8
    nice .venv/bin/python benchmarks/oneshot.py --datasets synthetic --output oneshot-synthetic --epochs 1 \
        --evaluations 30 --check-epochs 1 --final-epochs 5 --supernet-epochs 8 --paths 60
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report import Report, command_line, table  # noqa: E402
from evaluators.evaluate import evaluate  # noqa: E402
from evaluators.path_scoring import score_paths  # noqa: E402
from evaluators.ranking_check import check_ranking  # noqa: E402
from evaluators.supernet_training import train_supernet  # noqa: E402
from nas.oneshot import search_paths  # noqa: E402
from nas.oneshot.ranking import ranking_summary  # noqa: E402
from nas.spaces import space_from_config  # noqa: E402
from nas.strategies import Result, get_strategy  # noqa: E402


def evolution(space, dataset: str, args: argparse.Namespace, seed: int) -> dict[str, Any]:
    strategy = get_strategy("regularized", space, seed=seed, population=args.population, sample_size=args.sample,
                            max_evaluations=args.evaluations)
    seconds = 0.0
    while not strategy.done:
        for candidate in strategy.ask(1):
            mark = time.process_time()
            result = evaluate(candidate.genome, space, candidate_budget(args, seed), dataset, "cpu")
            seconds += time.process_time() - mark
            strategy.tell(candidate.id, Result(fitness=result.fitness) if result.status == "ok"
                          else Result.failed(result.status))
    best, fitness = strategy.best(1)[0]
    return {"best": best.genome, "search_fitness": fitness.fitness, "seconds": {"search": seconds},
            "evaluated": strategy.evaluations}


def candidate_budget(args: argparse.Namespace, seed: int) -> dict[str, Any]:
    return {"epochs": args.epochs, "batch_size": args.batch, "seed": seed}


def oneshot(space, dataset: str, args: argparse.Namespace, seed: int, folder: Path) -> dict[str, Any]:
    mark = time.process_time()
    supernet = train_supernet(space, dataset, {"epochs": args.supernet_epochs, "batch_size": args.batch,
                                               "learning_rate": args.supernet_lr, "seed": seed}, folder,
                              probes=args.probes)
    if supernet.status != "ok":
        raise RuntimeError(f"the supernet training failed: {supernet.status}: {supernet.reason}")
    supernet_seconds = time.process_time() - mark
    timings: list[dict[str, float]] = []

    def score(paths):
        scored = score_paths(paths, space, dataset, weights=supernet.weights, digest=supernet.digest, seed=seed,
                             calibration_images=args.calibration_images)
        timings.extend(r["timings"] for r in scored["results"] if r["status"] == "ok")
        return [r["accuracy"] for r in scored["results"]]

    mark = time.process_time()
    strategy = get_strategy("regularized", space, seed=seed, population=args.path_population, sample_size=args.sample,
                            max_evaluations=args.paths)
    search_paths(strategy, score, batch=args.path_batch)
    path_seconds = time.process_time() - mark
    best, fitness = strategy.best(1)[0]
    scoring = sum(t["calibrate"] + t["validate"] for t in timings)
    return {"best": best.genome, "search_fitness": fitness.fitness, "supernet": supernet,
            "seconds": {"supernet": supernet_seconds, "paths": path_seconds},
            "evaluated": strategy.evaluations, "paths_per_second": len(timings) / path_seconds,
            "overhead": statistics.mean(t["overhead"] for t in timings),
            "per_path": scoring / len(timings)}


def final(genome, space, dataset: str, args: argparse.Namespace) -> tuple[float, float]:
    mark = time.process_time()
    result = evaluate(genome, space, {"epochs": args.final_epochs, "batch_size": args.batch, "seed": 0}, dataset, "cpu")
    return result.fitness, time.process_time() - mark


def tau_text(summary: dict[str, Any], paths: list[dict[str, Any]]) -> str:
    """Tau and its interval; when undefined (one side constant), the values that made it so."""
    if summary["tau"] is None or summary.get("low") is None:
        supernet = sorted({round(r["supernet"], 4) for r in paths if r["supernet"] is not None})
        alone = sorted({round(r["standalone"], 4) for r in paths if r["standalone"] is not None})
        return f"undefined (n={summary['n']}; supernet scores {supernet}, stand-alone {alone})"
    return f"{summary['tau']:.2f} [{summary['low']:.2f}, {summary['high']:.2f}] (n={summary['n']})"


def tau_by_calibration(check: dict[str, Any], space, dataset: str, supernet, args: argparse.Namespace,
                       seed: int) -> str:
    """Tau of the check's paths when the supernet scores come from ``--tau-calibrations`` images each (the
    stand-alone accuracies are the check's): what a cheaper recalibration costs in ranking quality."""
    usable = [r for r in check["paths"] if r["standalone"] is not None]
    texts = []
    for images in args.tau_calibrations:
        scored = score_paths([r["path"] for r in usable], space, dataset, weights=supernet.weights,
                             digest=supernet.digest, seed=seed, calibration_images=images)["results"]
        pairs = [(s["accuracy"], r["standalone"]) for s, r in zip(scored, usable) if s["accuracy"] is not None]
        summary = ranking_summary([a for a, _ in pairs], [b for _, b in pairs])
        texts.append(f"{images}: {summary['tau']:.2f}")
    return ", ".join(texts)


def run(dataset: str, args: argparse.Namespace, report: Report) -> None:
    space = space_from_config({"name": "cell", "cells_per_stage": args.cells, "stages": args.stages,
                               "channels": args.channels})
    rows, checks = [], []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        with tempfile.TemporaryDirectory(prefix="oneshot-bench-") as folder:
            ea = evolution(space, dataset, args, seed)
            print(f"{dataset} seed {seed}: evolution done", flush=True)
            one = oneshot(space, dataset, args, seed, Path(folder))
            print(f"{dataset} seed {seed}: one-shot search done", flush=True)
            ea_final, ea_final_s = final(ea["best"], space, dataset, args)
            one_final, one_final_s = final(one["best"], space, dataset, args)
            print(f"{dataset} seed {seed}: finals done", flush=True)
            mark = time.process_time()
            check = check_ranking(space, dataset, {**candidate_budget(args, seed), "epochs": args.check_epochs},
                                  weights=one["supernet"].weights, digest=one["supernet"].digest, count=args.check,
                                  seed=1000 + seed)
            check_s = time.process_time() - mark
            taus = tau_by_calibration(check, space, dataset, one["supernet"], args, seed)
        ea_search = ea["seconds"]["search"]
        one_search = one["seconds"]["supernet"] + one["seconds"]["paths"]
        summary = check["summary"]
        pipeline = one_search + one_final_s
        evolution_total = ea_search + ea_final_s
        checks.append(summary)
        rows.append([seed, f"{100 * ea_final:.2f}", f"{100 * one_final:.2f}", f"{100 * (one_final - ea_final):+.2f}",
                     f"{ea_search:.1f}", f"{one['seconds']['supernet']:.1f}", f"{one['seconds']['paths']:.1f}",
                     f"{one_search / ea_search:.2f}", f"{ea_final_s:.1f} / {one_final_s:.1f}",
                     f"{pipeline / evolution_total:.3f}", f"{check_s:.1f}",
                     f"{(pipeline + check_s) / evolution_total:.2f}",
                     tau_text(summary, check["paths"]), taus,
                     f"{one['paths_per_second']:.1f}",
                     f"{1e3 * one['overhead']:.3f} / {1e3 * one['per_path']:.1f}"
                     f" ({100 * one['overhead'] / one['per_path']:.2f}%)",
                     f"{one['supernet'].curve[-1]['val_accuracy'] * 100:.1f}"])
        print(f"{dataset} seed {seed}: evolution best {ea['best']} one-shot best {one['best']}", flush=True)
    headers = ["seed", "evolution final acc %", "one-shot final acc %", "difference (points)",
               "evolution search device-s", "supernet device-s", "path search device-s",
               "one-shot / evolution search device-s", "final training device-s (evolution / one-shot)",
               "whole pipeline / evolution + final, device-s (no check)", "ranking check device-s",
               "whole pipeline with the check / evolution + final",
               "Kendall tau [95% interval] over random paths", "tau by calibration images (same paths)", "path scoring paths/s (1 CPU thread)",
               "per-path overhead / scoring ms (share)", "supernet probes' mean val acc % (last epoch)"]
    report.add(f"## {dataset}\n\nSpace: cell, {args.cells} cell(s) per stage, {args.stages} stages, {args.channels} "
               f"channels. Evolution: regularized (population {args.population}, tournament {args.sample}), "
               f"{args.evaluations} candidates x {args.epochs} epochs. One-shot: supernet {args.supernet_epochs} "
               f"epochs (lr {args.supernet_lr}), regularized over paths (population {args.path_population}, "
               f"tournament {args.sample}), {args.paths} paths scored, batch-norm statistics from "
               f"{args.calibration_images} training images per path. Final: {args.final_epochs} epochs, training seed "
               f"0, for both. Ranking check: {args.check} random paths x {args.check_epochs} epochs stand-alone. Device-s are CPU seconds of "
               f"this process (one torch thread), so other work on the machine does not inflate them.\n\n"
               + table(headers, rows))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["digits"])
    parser.add_argument("--output", default="oneshot", help="results/<output>.md")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--first-seed", type=int, default=0, help="seeds first_seed .. first_seed + seeds - 1")
    parser.add_argument("--cells", type=int, default=1)
    parser.add_argument("--stages", type=int, default=2)
    parser.add_argument("--channels", type=int, default=16)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=4, help="candidate budget (evolution, ranking check)")
    parser.add_argument("--population", type=int, default=10)
    parser.add_argument("--sample", type=int, default=3)
    parser.add_argument("--evaluations", type=int, default=50)
    parser.add_argument("--supernet-epochs", type=int, default=20)
    parser.add_argument("--supernet-lr", type=float, default=0.003)
    parser.add_argument("--probes", type=int, default=2)
    parser.add_argument("--path-population", type=int, default=20)
    parser.add_argument("--paths", type=int, default=100)
    parser.add_argument("--path-batch", type=int, default=10)
    parser.add_argument("--calibration-images", type=int, default=512, help="BN recalibration images per path")
    parser.add_argument("--tau-calibrations", type=int, nargs="*", default=[128, 256, 512],
                        help="calibration sizes whose tau is measured on the check's paths")
    parser.add_argument("--final-epochs", type=int, default=15)
    parser.add_argument("--check", type=int, default=20)
    parser.add_argument("--check-epochs", type=int, default=4, help="stand-alone budget of the ranking check")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    report = Report(args.output, "One-shot (weight-sharing) search vs regularized evolution",
                    command_line(argv, "oneshot.py"))
    for dataset in args.datasets:
        run(dataset, args, report)


if __name__ == "__main__":
    main()
