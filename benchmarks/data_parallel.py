"""One candidate trained on a gang of CPU ranks (gloo) against one rank: the same seed and global batch, so the
accuracies should agree (within 2 points); the time shows what data parallelism buys on this machine's cores.

Each rank is a subprocess with one PyTorch thread (``evaluators.data_parallel``); the total includes starting
the ranks (importing torch) and the rendezvous, which a gang pays per evaluation. Run from the repository root::

    python benchmarks/data_parallel.py
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report import Report, command_line, table  # noqa: E402
from evaluators.data_parallel import evaluate_on_gang  # noqa: E402

CANDIDATES = {
    "small (chain, 16-32 filters)": ({"layers": [{"kernel": 3, "filters": 16}, {"kernel": 3, "filters": 32}]},
                                     {"name": "chain", "max_layers": 4, "modules": 2}),
    "larger (chain, 4 layers to 128 filters)": (
        {"layers": [{"kernel": 5, "filters": 16}, {"kernel": 5, "filters": 64}, {"kernel": 5, "filters": 128},
                    {"kernel": 3, "filters": 16}]}, {"name": "chain"}),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--ranks", default="1,2", help="gang sizes to measure (default 1,2)")
    parser.add_argument("--output", default="data_parallel")
    args = parser.parse_args(argv)
    report = Report(args.output, "Data-parallel evaluation on CPU ranks (gloo): one rank against a gang",
                    command_line(argv, "data_parallel.py"))
    report.add(f"digits, {args.epochs} epochs, global batch {args.batch_size}, seed 1, Adam at the budget's "
               "learning rate on every gang size; one PyTorch thread per rank. The machine's 2 cores were shared "
               "with other work while this ran (see the load average): times are indicative, accuracies exact.")
    rows = []
    budget = {"epochs": args.epochs, "batch_size": args.batch_size, "seed": 1}
    for name, (genome, space) in CANDIDATES.items():
        base = None
        for ranks in (int(r) for r in args.ranks.split(",")):
            result = evaluate_on_gang(genome, space, budget, "digits", ["cpu"] * ranks, threads=1)
            if not result.ok:
                rows.append([name, str(ranks), "failed", result.failure or "", result.message[:80], "", ""])
                continue
            base = base or result
            rows.append([name, str(ranks), result.device, f"{result.fitness:.4f}",
                         f"{100 * (result.fitness - base.fitness):+.1f}", f"{result.timings['train']:.1f}",
                         f"{base.timings['train'] / result.timings['train']:.2f}", f"{result.timings['total']:.1f}"])
            print(rows[-1], flush=True)
    report.add(table(["candidate", "ranks", "devices recorded", "validation accuracy", "points vs 1 rank",
                      "train, s", "train speedup vs 1 rank", "total, s (incl. starting ranks)"], rows))


if __name__ == "__main__":
    main()
