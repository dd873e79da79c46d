"""The ranking side of ``benchmarks/oneshot.py`` alone (no evolution, no path search, no finals): the supernet of
a seed and its ranking check with ``--repeats`` stand-alone trainings per path, then Kendall's tau-b for every
choice the ``oneshot`` kind offers (``oneshot.check``: the supernet's ``score`` and the ``reference``, by
validation accuracy or loss, against one training or the mean of all ``--repeats``), the reference's own noise
(tau between two trainings of the same paths) and the ceiling that noise sets for any score.

The supernet, the check's paths and their first two stand-alone trainings are the same as ``oneshot.py``'s for
the same seed and arguments (everything is drawn from the seed; the second training is seed + 500, as
``oneshot_noise.py``'s). Writes ``results/<output>.md`` and, per path, ``results/<output>.json`` (what
``oneshot_summary.py`` reads). Run from the repository root, one seed per process::

    nice .venv/bin/python benchmarks/oneshot_tau.py --first-seed 0 --output oneshot-check-seed0
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.oneshot import candidate_budget, supernet_phase  # noqa: E402
from benchmarks.oneshot_noise import ceiling, summary_text  # noqa: E402
from benchmarks.report import RESULTS, Report, command_line, table  # noqa: E402
from evaluators.ranking_check import check_ranking  # noqa: E402
from nas.oneshot import RANK_BY, check_summary, noise_ceiling, rank_value, ranking_summary  # noqa: E402
from nas.spaces import space_from_config  # noqa: E402


def mean_ceiling(tau_ab: float, repeats: int) -> float:
    """``nas.oneshot.noise_ceiling``: the tau a perfect score reaches against the mean of ``repeats``."""
    return noise_ceiling(tau_ab, repeats)


def taus(points: list[dict[str, Any]], repeats: int) -> dict[str, Any]:
    """Every choice's tau (``score/reference/trainings``, trainings ``1`` or ``repeats``), the agreement of the
    first two trainings by accuracy and by loss, and their ceilings."""
    found: dict[str, Any] = {}
    for trainings in sorted({1, repeats}):
        cut = [{**p, "trainings": p["trainings"][:trainings]} for p in points]
        for score in RANK_BY:
            for reference in RANK_BY:
                found[f"{score}/{reference}/{trainings}"] = check_summary(cut, score=score, reference=reference)
    if repeats >= 2:
        for by in RANK_BY:
            pairs = [(rank_value(a["accuracy"], a["loss"], by), rank_value(b["accuracy"], b["loss"], by))
                     for a, b in (p["trainings"][:2] for p in points)]
            pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
            agreement = ranking_summary([a for a, _ in pairs], [b for _, b in pairs])
            tau_ab = agreement["tau"] or 0.0
            found[f"noise/{by}"] = {**agreement, "ceiling": ceiling(tau_ab),
                                    "ceiling_mean": mean_ceiling(tau_ab, repeats)}
    return found


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
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    report = Report(args.output, "One-shot ranking check: tau by score and reference, and the reference's noise "
                                 "(digits)", command_line(argv, "oneshot_tau.py"))
    space = space_from_config({"name": "cell", "cells_per_stage": 1, "stages": 2, "channels": 16})
    rows, records = [], []
    choices = [(s, r, t) for t in sorted({1, args.repeats}) for s in RANK_BY for r in RANK_BY]
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        with tempfile.TemporaryDirectory(prefix="oneshot-tau-") as folder:
            supernet, supernet_s = supernet_phase(space, "digits", args, seed, Path(folder))
            training = {**candidate_budget(args, seed), "epochs": args.check_epochs}
            mark = time.process_time()
            check = check_ranking(space, "digits", training, weights=supernet.weights, digest=supernet.digest,
                                  count=args.check, seed=1000 + seed, repeats=args.repeats)
            check_s = time.process_time() - mark
        found = taus(check["paths"], args.repeats)
        noise = [f"{summary_text(found[f'noise/{by}'])}; ceiling {found[f'noise/{by}']['ceiling']:.2f} (one), "
                 f"{found[f'noise/{by}']['ceiling_mean']:.2f} (mean of {args.repeats})"
                 for by in RANK_BY] if args.repeats >= 2 else ["-", "-"]
        rows.append([seed, f"{supernet_s:.1f}", f"{check_s:.1f}", *noise,
                     *(summary_text(found[f"{s}/{r}/{t}"]) for s, r, t in choices)])
        records.append({"seed": seed, "supernet_s": supernet_s, "check_s": check_s, "repeats": args.repeats,
                        "taus": found, "paths": [{k: v for k, v in p.items() if k != "path"} | {"path": p["path"]}
                                                 for p in check["paths"]]})
        print(f"seed {seed} done", flush=True)
        (RESULTS / f"{args.output}.json").write_text(json.dumps(records, indent=1, default=str))
        if len(rows) > 1:
            report.parts.pop()  # rewritten with every row so far: an interrupted run keeps its seeds
        report.add(f"## digits\n\nSupernet {args.supernet_epochs} epochs (lr {args.supernet_lr}); ranking check: "
                   f"{args.check} random paths x {args.check_epochs} epochs stand-alone, {args.repeats} trainings "
                   f"per path (training seeds seed, seed + 500, ...; each its own validation split), supernet "
                   f"scores with 512 calibration images on the first training's split. Tau-b (ties corrected), "
                   f"95% interval. Device-s: CPU seconds of this process (one torch thread).\n\n" + table(
                       ["seed", "supernet device-s", f"ranking check device-s ({args.repeats} trainings per path)",
                        "reference noise by accuracy: tau between two trainings; ceiling",
                        "reference noise by loss: tau between two trainings; ceiling",
                        *(f"tau, supernet {s} vs {r} of {'one training' if t == 1 else f'mean of {t}'}"
                          for s, r, t in choices)], rows))


if __name__ == "__main__":
    main()
