"""One-shot (weight-sharing) search against regularized evolution with full per-candidate training, on the same
space, seeds and final training (issue 33's benchmark, engine part: one process, one CPU thread, no web stack).

- **evolution**: ``regularized`` over the cell space, each candidate trained stand-alone under the candidate
  budget (``--epochs``); its device-seconds are the sum of the candidates' evaluation times.
- **one-shot**: the supernet trained Single Path One-Shot style (``--supernet-epochs``, one uniformly sampled
  path per step), then two ``regularized`` searches over paths on it, each path's fitness its supernet score
  (BN statistics recomputed per path on ``--calibration-images`` training images): its validation accuracy (as
  the ``oneshot`` kind scores) or its validation loss (negated); device-seconds: the supernet's training (with its
  per-epoch probes) and the path search.
- **final**: the best genome of each search retrained from scratch under the same final budget
  (``--final-epochs``, same training seed): the model a user gets.
- **ranking check**: ``--check`` random paths trained stand-alone under ``--check-epochs``, against their
  supernet scores: Kendall's tau-b and its 95% interval (Fisher-type normal approximation, Fieller, Hartley &
  Pearson 1957: var(atanh tau) = 0.437 / (n - 4)); then ``benchmarks/oneshot_noise.py``: the same paths trained
  a second time (the reference's own noise and the ceiling it sets), and tau by accuracy and by loss for each
  ``--tau-calibrations`` size, against one training and against the mean of two.
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
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.oneshot_noise import SECOND_REFERENCE, reference_noise, summary_text  # noqa: E402
from benchmarks.report import RESULTS, Report, command_line, table  # noqa: E402
from evaluators.evaluate import evaluate  # noqa: E402
from evaluators.path_scoring import score_paths  # noqa: E402
from evaluators.ranking_check import check_ranking  # noqa: E402
from evaluators.supernet_training import train_supernet  # noqa: E402
from nas.oneshot import search_paths  # noqa: E402
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


def supernet_phase(space, dataset: str, args: argparse.Namespace, seed: int, folder: Path):
    mark = time.process_time()
    supernet = train_supernet(space, dataset, {"epochs": args.supernet_epochs, "batch_size": args.batch,
                                               "learning_rate": args.supernet_lr, "seed": seed}, folder,
                              probes=args.probes)
    if supernet.status != "ok":
        raise RuntimeError(f"the supernet training failed: {supernet.status}: {supernet.reason}")
    return supernet, time.process_time() - mark


def path_search(space, dataset: str, args: argparse.Namespace, seed: int, supernet, by: str) -> dict[str, Any]:
    """``regularized`` over paths, each path's fitness its supernet accuracy (``by="accuracy"``, as the kind
    scores) or its negated validation loss (``by="loss"``)."""
    timings: list[dict[str, float]] = []

    def score(paths):
        scored = score_paths(paths, space, dataset, weights=supernet.weights, digest=supernet.digest, seed=seed,
                             calibration_images=args.calibration_images)
        timings.extend(r["timings"] for r in scored["results"] if r["status"] == "ok")
        if by == "loss":
            return [-r["val_loss"] if r["status"] == "ok" else None for r in scored["results"]]
        return [r["accuracy"] for r in scored["results"]]

    mark = time.process_time()
    strategy = get_strategy("regularized", space, seed=seed, population=args.path_population, sample_size=args.sample,
                            max_evaluations=args.paths)
    search_paths(strategy, score, batch=args.path_batch)
    path_seconds = time.process_time() - mark
    best, fitness = strategy.best(1)[0]
    scoring = sum(t["calibrate"] + t["validate"] for t in timings)
    return {"best": best.genome, "search_fitness": fitness.fitness, "seconds": path_seconds,
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


def run(dataset: str, args: argparse.Namespace, report: Report) -> list[dict[str, Any]]:
    space = space_from_config({"name": "cell", "cells_per_stage": args.cells, "stages": args.stages,
                               "channels": args.channels})
    rows, records = [], []
    calibrations = sorted({*args.tau_calibrations, args.calibration_images})
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        with tempfile.TemporaryDirectory(prefix="oneshot-bench-") as folder:
            ea = evolution(space, dataset, args, seed)
            print(f"{dataset} seed {seed}: evolution done", flush=True)
            supernet, supernet_s = supernet_phase(space, dataset, args, seed, Path(folder))
            searches = {by: path_search(space, dataset, args, seed, supernet, by) for by in ("accuracy", "loss")}
            print(f"{dataset} seed {seed}: one-shot searches done", flush=True)
            ea_final, ea_final_s = final(ea["best"], space, dataset, args)
            finals = {}
            for by, found in searches.items():
                same = [f for b, f in finals.items() if searches[b]["best"] == found["best"]]
                finals[by] = same[0] if same else final(found["best"], space, dataset, args)
            print(f"{dataset} seed {seed}: finals done", flush=True)
            mark = time.process_time()
            training = {**candidate_budget(args, seed), "epochs": args.check_epochs}
            check = check_ranking(space, dataset, training, weights=supernet.weights, digest=supernet.digest,
                                  count=args.check, seed=1000 + seed)
            check_s = time.process_time() - mark
            noise = reference_noise(check, space, dataset, supernet, training, calibrations, seed)
        ea_search = ea["seconds"]["search"]
        one = searches["accuracy"]
        record = {"seed": seed, "evolution": {"final": ea_final, "search_s": ea_search, "final_s": ea_final_s,
                                              "best": ea["best"]},
                  "supernet_s": supernet_s, "check_s": check_s, "check": check["summary"], "noise": noise,
                  "supernet_last_probes": supernet.curve[-1]["val_accuracy"]}
        for by, found in searches.items():
            accuracy, seconds = finals[by]
            search = supernet_s + found["seconds"]
            record[by] = {"final": accuracy, "final_s": seconds, "paths_s": found["seconds"], "best": found["best"],
                          "search_ratio": search / ea_search,
                          "pipeline_ratio": (search + seconds) / (ea_search + ea_final_s)}
        records.append(record)
        taus = noise["taus"]
        rows.append([seed, f"{100 * ea_final:.2f}",
                     *(f"{100 * record[by]['final']:.2f} ({100 * (record[by]['final'] - ea_final):+.2f})"
                       for by in ("accuracy", "loss")),
                     f"{ea_search:.1f}", f"{supernet_s:.1f}",
                     f"{one['seconds']:.1f} / {searches['loss']['seconds']:.1f}",
                     f"{ea_final_s:.1f} / {finals['accuracy'][1]:.1f} / {finals['loss'][1]:.1f}",
                     *(f"{record[by]['search_ratio']:.3f} / {record[by]['pipeline_ratio']:.3f}"
                       for by in ("accuracy", "loss")),
                     f"{check_s:.1f}", tau_text(check["summary"], check["paths"]),
                     summary_text(noise["A-B"]) + f"; ceiling {noise['ceiling']:.2f}",
                     *(", ".join(f"{images}: {taus[f'{score}/{images}/{ref}']['tau']:.2f}"
                                 for images in calibrations)
                       for score in ("accuracy", "loss") for ref in ("A", "mean")),
                     summary_text(taus[f"loss/{args.calibration_images}/A"]),
                     f"{one['paths_per_second']:.1f}",
                     f"{1e3 * one['overhead']:.3f} / {1e3 * one['per_path']:.1f}"
                     f" ({100 * one['overhead'] / one['per_path']:.2f}%)",
                     f"{supernet.curve[-1]['val_accuracy'] * 100:.1f}"])
        print(f"{dataset} seed {seed}: evolution best {ea['best']} one-shot best {one['best']}", flush=True)
    headers = ["seed", "evolution final acc %", "one-shot final acc % (points), paths by accuracy",
               "one-shot final acc % (points), paths by loss",
               "evolution search device-s", "supernet device-s", "path search device-s (by accuracy / by loss)",
               "final training device-s (evolution / by accuracy / by loss)",
               "by accuracy: search phases / whole pipeline, share of evolution's device-s",
               "by loss: search phases / whole pipeline, share of evolution's device-s",
               "ranking check device-s", f"Kendall tau, supernet accuracy vs stand-alone (the check, n={args.check})",
               "reference noise: tau between two stand-alone trainings; ceiling against one",
               "tau, supernet accuracy vs one training (by calibration images)",
               "tau, supernet accuracy vs mean of two trainings", "tau, supernet loss vs one training",
               "tau, supernet loss vs mean of two trainings",
               f"tau, supernet loss ({args.calibration_images} images) vs one training [95%]",
               "path scoring paths/s (1 CPU thread)", "per-path overhead / scoring ms (share)",
               "supernet probes' mean val acc % (last epoch)"]
    report.add(f"## {dataset}\n\nSpace: cell, {args.cells} cell(s) per stage, {args.stages} stages, {args.channels} "
               f"channels. Evolution: regularized (population {args.population}, tournament {args.sample}), "
               f"{args.evaluations} candidates x {args.epochs} epochs. One-shot: supernet {args.supernet_epochs} "
               f"epochs (lr {args.supernet_lr}), regularized over paths (population {args.path_population}, "
               f"tournament {args.sample}), {args.paths} paths scored, batch-norm statistics from "
               f"{args.calibration_images} training images per path; two path searches on the same supernet, one "
               f"scoring paths by validation accuracy (as the kind does), one by validation loss. Final: "
               f"{args.final_epochs} epochs, training seed 0, for every best. Whole pipeline: search phases plus the "
               f"final training, on both sides. Ranking check: {args.check} random paths x {args.check_epochs} "
               f"epochs stand-alone (training seed = the seed), trained a second time with seed + "
               f"{SECOND_REFERENCE} for the reference's own noise (benchmarks/oneshot_noise.py). Device-s are CPU "
               f"seconds of this process (one torch thread), so other work on the machine does not inflate them."
               f"\n\n" + table(headers, rows))
    return records


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
    parser.add_argument("--tau-calibrations", type=int, nargs="+", default=[256, 1024],
                        help="calibration sizes whose tau is measured on the check's paths")
    parser.add_argument("--final-epochs", type=int, default=15)
    parser.add_argument("--check", type=int, default=20)
    parser.add_argument("--check-epochs", type=int, default=4, help="stand-alone budget of the ranking check")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    report = Report(args.output, "One-shot (weight-sharing) search vs regularized evolution",
                    command_line(argv, "oneshot.py"))
    records = {dataset: run(dataset, args, report) for dataset in args.datasets}
    (RESULTS / f"{args.output}.json").write_text(json.dumps(records, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
