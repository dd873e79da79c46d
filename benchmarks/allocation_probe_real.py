"""What the gang worker's scaling probe costs on this machine's CPU, against what the simulator charges for it
(``allocation_sim.Probe``: ``setup`` seconds plus ``fraction`` of the candidate's duration per gang size).

For a few candidates of the chain space on digits (a small, the tests' and a larger one), with one thread per
device as a gang worker's slot has: the probe's wall seconds on one device (the first of a process, which loads the
data set, and a later one), on a gang of ``cpu,cpu`` (two rank processes started, importing torch, meeting), the
whole evaluation on one device, and how well the probe's rate predicts that evaluation's training seconds.
``webapp.worker.rate_probe`` runs exactly these calls. Run from the repository root::

    python benchmarks/allocation_probe_real.py            # 3 candidates, 2 epochs (about a minute on 2 cores)
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from benchmarks.allocation_sim import Probe  # noqa: E402
from benchmarks.report import Report, command_line, table  # noqa: E402
from evaluators.evaluate import evaluate  # noqa: E402
from webapp.worker.rate_probe import STEPS  # noqa: E402

SPACE = {"name": "chain", "max_layers": 6, "modules": 2}
CANDIDATES = {
    "small (16 filters)": {"layers": [{"kernel": 3, "filters": 16}]},
    "tests' (16-32)": {"layers": [{"kernel": 3, "filters": 16}, {"kernel": 3, "filters": 32}]},
    "larger (64-128-128)": {"layers": [{"kernel": 3, "filters": 64}, {"kernel": 5, "filters": 128},
                                       {"kernel": 3, "filters": 128}]},
}


def _timed(genome: dict, training: dict, device, probe: int | None) -> tuple[float, object]:
    mark = time.perf_counter()
    result = evaluate(genome, SPACE, training, "digits", device, probe=probe)
    if not result.ok:
        raise RuntimeError(f"{device}: {result.failure} {result.message}")
    return time.perf_counter() - mark, result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2, help="timings per figure (the median is reported)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    training = {"epochs": args.epochs, "batch_size": 64, "learning_rate": 0.003, "seed": 1}
    charge = Probe()
    rows = []
    for name, genome in CANDIDATES.items():
        cold = _timed(genome, training, "cpu", STEPS)[0] if not rows else None
        single = [_timed(genome, training, "cpu", STEPS) for _ in range(args.repeats)]
        wide = [_timed(genome, training, ["cpu", "cpu"], STEPS) for _ in range(args.repeats)]
        full = [_timed(genome, training, "cpu", None) for _ in range(args.repeats)]
        t1 = statistics.median(seconds for seconds, _ in full)
        train = statistics.median(result.timings["train"] for _, result in full)
        rate = statistics.median(result.metrics["probe_rate"] for _, result in single)
        steps = single[0][1].metrics["probe_steps"]
        rate2 = statistics.median(result.metrics["probe_rate"] for _, result in wide)
        p1 = statistics.median(seconds for seconds, _ in single)
        p2 = statistics.median(seconds for seconds, _ in wide)
        t2 = t1 * rate / rate2
        simulated = (charge.setup + charge.fraction * t1, charge.setup + charge.fraction * t2)
        rows.append([name, f"{steps:.0f}", f"{t1:.2f}", f"{steps / rate:.2f} ({train:.2f})",
                     "-" if cold is None else f"{cold:.2f}", f"{p1:.2f}", f"{p2:.2f}", f"{rate2 / rate / 2:.2f}",
                     f"{simulated[0]:.2f}", f"{simulated[1]:.2f}"])
    report = Report("allocation-probe-real", "The scaling probe on the CPU: its cost against the simulator's charge",
                    command_line(argv, "allocation_probe_real.py"))
    report.add(f"Chain-space candidates on digits, {args.epochs} epochs of batches of 64, one PyTorch thread per "
               f"device; the probe: {STEPS} timed steps after one warm-up step (`webapp.worker.rate_probe`), on "
               f"`cpu` in this process and on a gang of `cpu,cpu` (two rank processes, `evaluators.data_parallel`). "
               f"Median of {args.repeats} timings. Columns: the evaluation's steps; its wall seconds on one device "
               "(T1); the probe's prediction of its training seconds (steps / probe rate) with the measured training "
               "seconds in brackets; the probe's wall seconds on one device (the process's first, with the data "
               "set's loading, then a later one) and on the gang; the gang's measured efficiency (rate on 2 / 2 x "
               f"rate on 1); the simulator's charge for the same parts ({charge.setup:g} s plus "
               f"{charge.fraction:.0%} of the candidate's duration on that gang).")
    report.add(table(["candidate", "steps", "T1 (s)", "probe's T1 train (measured)", "probe 1, first (s)",
                      "probe 1 (s)", "probe on cpu,cpu (s)", "efficiency of 2", "charged for 1 (s)",
                      "charged for 2 (s)"], rows))


if __name__ == "__main__":
    main()
