"""The ranking side of ``benchmarks/oneshot.py`` alone (no evolution, no path search, no finals): the supernet of
a seed, its ranking check and the reference's noise (``benchmarks/oneshot_noise.py``), for seeds whose searches
were measured before those columns existed. The supernet, the check's paths and their first stand-alone
training are the same as ``oneshot.py``'s for the same seed and arguments (everything is drawn from the seed).
Writes ``results/<output>.md``. Run from the repository root::

    nice .venv/bin/python benchmarks/oneshot_tau.py --first-seed 0 --seeds 3 --output oneshot-tau-seeds0-2
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.oneshot import candidate_budget, supernet_phase, tau_text  # noqa: E402
from benchmarks.oneshot_noise import SECOND_REFERENCE, reference_noise, summary_text  # noqa: E402
from benchmarks.report import Report, command_line, table  # noqa: E402
from evaluators.ranking_check import check_ranking  # noqa: E402
from nas.spaces import space_from_config  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", default="oneshot-tau")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--supernet-epochs", type=int, default=20)
    parser.add_argument("--supernet-lr", type=float, default=0.003)
    parser.add_argument("--probes", type=int, default=2)
    parser.add_argument("--check", type=int, default=20)
    parser.add_argument("--check-epochs", type=int, default=8)
    parser.add_argument("--tau-calibrations", type=int, nargs="+", default=[256, 1024])
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    report = Report(args.output, "One-shot ranking check and the reference's noise (digits)",
                    command_line(argv, "oneshot_tau.py"))
    space = space_from_config({"name": "cell", "cells_per_stage": 1, "stages": 2, "channels": 16})
    rows = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        with tempfile.TemporaryDirectory(prefix="oneshot-tau-") as folder:
            supernet, supernet_s = supernet_phase(space, "digits", args, seed, Path(folder))
            training = {**candidate_budget(args, seed), "epochs": args.check_epochs}
            mark = time.process_time()
            check = check_ranking(space, "digits", training, weights=supernet.weights, digest=supernet.digest,
                                  count=args.check, seed=1000 + seed)
            check_s = time.process_time() - mark
            noise = reference_noise(check, space, "digits", supernet, training, args.tau_calibrations, seed)
        taus = noise["taus"]
        rows.append([seed, f"{supernet_s:.1f}", f"{check_s:.1f}", tau_text(check["summary"], check["paths"]),
                     summary_text(noise["A-B"]) + f"; ceiling {noise['ceiling']:.2f}",
                     *(", ".join(f"{images}: {summary_text(taus[f'{score}/{images}/{ref}'])}"
                                 for images in args.tau_calibrations)
                       for score in ("accuracy", "loss") for ref in ("A", "mean"))])
        print(f"seed {seed} done", flush=True)
        if len(rows) > 1:
            report.parts.pop()  # rewritten with every row so far: an interrupted run keeps its seeds
        report.add(f"## digits\n\nSupernet {args.supernet_epochs} epochs (lr {args.supernet_lr}); ranking check: "
                   f"{args.check} random paths x {args.check_epochs} epochs stand-alone (training seed = the seed; "
                   f"supernet accuracy with 512 calibration images), trained a second time with seed + "
                   f"{SECOND_REFERENCE}.\n\n" + table(
                       ["seed", "supernet device-s", "ranking check device-s", "tau, the check",
                        "reference noise: tau between two stand-alone trainings; ceiling against one",
                        "tau, supernet accuracy vs one training", "tau, supernet accuracy vs mean of two",
                        "tau, supernet loss vs one training", "tau, supernet loss vs mean of two"], rows))


if __name__ == "__main__":
    main()
