"""Whether a cheaper supernet keeps the one-shot final model within a point of evolution's (issue 33's whole
pipeline at a fifth of evolution's device-seconds): the one-shot side of ``benchmarks/oneshot.py`` alone (the
supernet, the path search by accuracy as the kind scores, the final training), for each ``--supernet-epochs``,
against the evolution side read from the seed's table of ``oneshot.py`` (the same space, seed and final budget:
evolution is not run again). The default budgets start with that table's (20 epochs), run again here so every
budget's device-seconds come from the same run. Writes ``results/<output>.md``. Run from the repository
root, one seed per process::

    nice .venv/bin/python benchmarks/oneshot_budget.py --first-seed 2 --output oneshot-budget-seed2
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.oneshot import final, path_search, supernet_phase  # noqa: E402
from benchmarks.oneshot_summary import evolution_side  # noqa: E402
from benchmarks.report import Report, command_line, table  # noqa: E402
from nas.spaces import space_from_config  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", default="oneshot-budget")
    parser.add_argument("--first-seed", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--supernet-epochs", type=int, nargs="+", default=[20, 14, 10])
    parser.add_argument("--supernet-lr", type=float, default=0.003)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--probes", type=int, default=2)
    parser.add_argument("--path-population", type=int, default=20)
    parser.add_argument("--sample", type=int, default=3)
    parser.add_argument("--paths", type=int, default=60)
    parser.add_argument("--path-batch", type=int, default=10)
    parser.add_argument("--calibration-images", type=int, default=256)
    parser.add_argument("--final-epochs", type=int, default=15)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    report = Report(args.output, "One-shot on digits: a cheaper supernet, the final model and the whole pipeline",
                    command_line(argv, "oneshot_budget.py"))
    space = space_from_config({"name": "cell", "cells_per_stage": 1, "stages": 2, "channels": 16})
    rows = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        evolution = evolution_side(seed)
        for epochs in args.supernet_epochs:
            budget = argparse.Namespace(**{**vars(args), "supernet_epochs": epochs})
            with tempfile.TemporaryDirectory(prefix="oneshot-budget-") as folder:  # the weights' file
                supernet, supernet_s = supernet_phase(space, "digits", budget, seed, Path(folder))
                found = path_search(space, "digits", budget, seed, supernet, "accuracy")
            accuracy, final_s = final(found["best"], space, "digits", budget)
            pipeline = (supernet_s + found["seconds"] + final_s) / (evolution["search_s"] + evolution["final_s"])
            difference = accuracy * 100 - evolution["final"]
            rows.append([seed, epochs, f"{supernet_s:.1f}", f"{found['seconds']:.1f}", f"{final_s:.1f}",
                         f"{accuracy * 100:.2f} ({difference:+.2f})", f"{pipeline:.3f}",
                         "yes" if difference >= -1.0 else "NO", "yes" if pipeline <= 0.2 else "NO"])
            print(f"seed {seed}, supernet {epochs} epochs done", flush=True)
            if len(rows) > 1:
                report.parts.pop()
            report.add(f"## digits\n\nThe one-shot side of `oneshot.py` (path search: regularized, population "
                       f"{args.path_population}, {args.paths} paths by supernet accuracy, {args.calibration_images} "
                       f"calibration images; final: {args.final_epochs} epochs, training seed 0) for each supernet "
                       f"budget; evolution's final accuracy and device-s (search, final) are read from the seed's "
                       f"table ({evolution['table']}: evolution {evolution['final']:.2f}%, search "
                       f"{evolution['search_s']:.1f} s, final {evolution['final_s']:.1f} s). Device-s: CPU seconds of "
                       f"this process (one torch thread).\n\n" + table(
                           ["seed", "supernet epochs", "supernet device-s", "path search device-s",
                            "final training device-s", "one-shot final acc % (points vs evolution)",
                            "whole pipeline / evolution's", "within 1 point", "pipeline <= 1/5"], rows))


if __name__ == "__main__":
    main()
