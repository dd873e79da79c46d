"""A one-shot search's supernet trained on a gang of CPU ranks (gloo) against one rank, through the launcher the
engine uses (``evaluators.supernet_training.train_supernet_on``): same seed, same global batch, the same path at
every step on every rank. Measured: wall seconds (starting the ranks included), each rank's training seconds,
the sampled paths' accuracy, and whether the two supernets rank paths alike (Kendall tau between their scores
of the same random paths), since a supernet is only as good as its ranking.

One PyTorch thread per rank. Run from the repository root::

    nice .venv/bin/python benchmarks/oneshot_gang.py
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report import Report, command_line, table  # noqa: E402
from evaluators.path_scoring import score_paths  # noqa: E402
from evaluators.supernet_training import WEIGHTS, train_supernet_on  # noqa: E402
from nas.oneshot import kendall_tau, per_device, random_paths  # noqa: E402
from nas.spaces import space_from_config  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=20, help="supernet epochs")
    parser.add_argument("--batch", type=int, default=64, help="global batch")
    parser.add_argument("--channels", type=int, default=16)
    parser.add_argument("--probes", type=int, default=2)
    parser.add_argument("--paths", type=int, default=20, help="random paths scored by every supernet")
    parser.add_argument("--ranks", default="1,2", help="gang sizes (default 1,2)")
    parser.add_argument("--output", default="oneshot-gang")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    config = {"name": "cell", "cells_per_stage": 1, "stages": 2, "channels": args.channels}
    space = space_from_config(config)
    budget = {"epochs": args.epochs, "batch_size": args.batch, "learning_rate": 0.003, "seed": 0}
    report = Report(args.output, "One-shot supernet on a gang of CPU ranks against one rank",
                    command_line(argv, "oneshot_gang.py"))
    report.add(f"digits, cell space (1 cell per stage, 2 stages, {args.channels} channels), {args.epochs} supernet "
               f"epochs, global batch {args.batch}, Adam lr 0.003, seed 0, {args.probes} probe paths per epoch; "
               f"{args.paths} random paths (seed 0) scored by each supernet. One PyTorch thread per rank; load "
               f"average at start {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (shared with other work: "
               "times are indicative, accuracies exact).")
    paths = random_paths(space, 0, args.paths)
    rows, ranks_rows, scores = [], [], {}
    for size in (int(r) for r in args.ranks.split(",")):
        with tempfile.TemporaryDirectory(prefix="oneshot-gang-") as folder:
            mark = time.perf_counter()
            result = train_supernet_on(["cpu"] * size, config, "digits", budget, folder, probes=args.probes,
                                       threads=1)
            wall = time.perf_counter() - mark
            if not result.ok:
                rows.append([str(size), "failed", result.failure, result.message[:80], "", "", "", ""])
                continue
            scored = score_paths(paths, config, "digits", weights=str(Path(folder) / WEIGHTS), seed=0)
        scores[size] = [found["accuracy"] for found in scored["results"]]
        base = scores[min(scores)]
        last = result.curve[-1]
        rows.append([str(size), result.device, f"{wall:.1f}", f"{result.timings['train']:.1f}",
                     f"{last['train_loss']:.4f}", f"{last['val_accuracy']:.4f}",
                     f"{sum(scores[size]) / len(paths):.4f}", f"{kendall_tau(base, scores[size]):.3f}"])
        for device in per_device(last):
            ranks_rows.append([str(size), str(device["rank"]), device["device"], f"{device['probes']:.0f}",
                               "" if device["val_accuracy"] is None else f"{device['val_accuracy']:.4f}",
                               f"{device['train_seconds']:.2f}"])
        print(rows[-1], flush=True)
    report.add(table(["ranks", "devices recorded", "wall, s (incl. starting ranks)", "train, s (leader)",
                      "last train loss", "last probes' accuracy", f"mean score of the {args.paths} paths",
                      "Kendall tau of the path scores vs 1 rank"], rows))
    report.add("Each rank's record of the last epoch (the panel's per-device table):\n\n" + table(
        ["ranks", "rank", "device", "probe paths", "their accuracy", "train s in the epoch"], ranks_rows))


if __name__ == "__main__":
    main()
