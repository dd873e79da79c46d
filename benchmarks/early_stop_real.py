"""Early stopping on real training curves: chain architectures trained on digits for ``--epochs`` epochs, each
under its own learning-rate schedule, so that the curves' shapes differ as they do in a real search (issue 29).

Recording (needs torch; once, a few minutes on one CPU thread): ``--candidates`` architectures drawn from the
chain space, each trained with SGD (momentum 0.9) at a log-uniform base rate under one of :data:`SCHEDULES`
(constant; step decay by 10 at 50% and 75%; cosine; linear warm-up over 20-50% then cosine; a slow constant
rate), validation accuracy recorded after every epoch. The curves go to small JSON files
(``benchmarks/results/early_stop_real-curves.json`` and ``-30.json``, candidates 0-29 and 30-59), read back on
later runs.

Replaying (numpy only): the recorded pool, shuffled by each seed, is driven through every pruner of
``benchmarks/early_stop.py`` on ``--workers`` asynchronous slots exactly as the control loop drives it (a pruned
candidate's curve is the prefix of its full curve; its cost per epoch is the one recorded). The same columns as
``early_stop.py``; "true best" is the best recorded final (no hidden truth here), a shape is a schedule.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.early_stop import (HEADERS, PRUNERS, WHERE_HEADERS, Pool, _coverage, _percent, checks,  # noqa: E402
                                   replay, summarise, where)
from benchmarks.report import RESULTS, Report, command_line, table  # noqa: E402

SCHEDULES = ("constant", "step", "cosine", "warmup", "slow")
#: The committed recording: candidates 0-29 and 30-59, recorded at once by two processes (``--first 30``).
CURVES = f'{RESULTS / "early_stop_real-curves.json"},{RESULTS / "early_stop_real-curves-30.json"}'


def rate(schedule: str, base: float, epoch: int, epochs: int, warmup: float) -> float:
    """The learning rate of ``epoch`` (0-based) under ``schedule``."""
    u = epoch / epochs
    if schedule == "step":
        return base * (0.1 if u >= 0.5 else 1.0) * (0.1 if u >= 0.75 else 1.0)
    if schedule == "cosine":
        return base * 0.5 * (1 + math.cos(math.pi * u))
    if schedule == "warmup":
        if u < warmup:
            return base * (epoch + 1) / (warmup * epochs + 1)
        return base * 0.5 * (1 + math.cos(math.pi * (u - warmup) / (1 - warmup)))
    if schedule == "slow":
        return base * 0.03
    return base


def record(count: int, epochs: int, seed: int, subset: int, path: Path, first: int = 0) -> dict:
    """Train architectures ``first`` to ``count - 1`` on ``subset`` training images (few enough that the
    architectures and schedules end apart); their curves, schedules, costs and the seconds it took, written to
    ``path`` after each one (a run that was interrupted goes on from there: candidate ``i`` is drawn from ``seed``
    and ``i`` alone, so two processes can record two ranges into two files)."""
    import torch
    import torch.nn.functional as F

    from evaluators.datasets import load_dataset
    from evaluators.networks import build_model
    from nas.spaces import space_from_config

    torch.set_num_threads(1)
    config = {"name": "chain", "max_layers": 3, "modules": 2}
    space = space_from_config(config)
    data = load_dataset("digits", "cpu", 0)
    train = torch.from_numpy(np.random.default_rng(seed).permutation(len(data.train_x))[:subset])
    train_x, train_y = data.train_x[train], data.train_y[train]
    done = json.loads(path.read_text()) if path.exists() else {"values": [], "shapes": [], "costs": [], "seconds": 0.0}
    curves, shapes, costs, started = done["values"], done["shapes"], done["costs"], time.perf_counter() - done["seconds"]
    for index in range(first + len(curves), count):
        rng = np.random.default_rng([seed, index])
        genome = space.sample(rng)
        schedule = SCHEDULES[int(rng.integers(len(SCHEDULES)))]
        base, warmup = float(10 ** rng.uniform(-2.5, -0.5)), float(rng.uniform(0.2, 0.5))
        torch.manual_seed(index)
        model = build_model(genome, config, "digits")
        optimizer = torch.optim.SGD(model.parameters(), lr=base, momentum=0.9)
        generator = torch.Generator().manual_seed(index)
        values, mark = [], time.perf_counter()
        for epoch in range(epochs):
            for group in optimizer.param_groups:
                group["lr"] = rate(schedule, base, epoch, epochs, warmup)
            model.train()
            order = torch.randperm(len(train_x), generator=generator)
            for start in range(0, len(order) - 31, 32):
                batch = order[start:start + 32]
                loss = F.cross_entropy(model(train_x[batch]), train_y[batch])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                accuracy = float((model(data.val_x).argmax(1) == data.val_y).float().mean())
            values.append(accuracy if math.isfinite(accuracy) else 0.0)
        curves.append([round(v, 4) for v in values])
        shapes.append(schedule)
        costs.append((time.perf_counter() - mark) / epochs)
        saved = {"epochs": epochs, "values": curves, "shapes": shapes, "costs": costs,
                 "seconds": time.perf_counter() - started, "seed": seed, "subset": subset, "first": first,
                 "complete": False}
        path.write_text(json.dumps(saved))
        print(f"  {index + 1}/{count} {schedule} lr {base:.4f}: {values[0]:.3f} -> {values[-1]:.3f}", flush=True)
    saved = {**json.loads(path.read_text()), "complete": True}
    path.write_text(json.dumps(saved))
    return saved


def merged(paths: list[Path]) -> dict:
    """Recordings of disjoint index ranges (``--first``, recorded at once by several processes) as one: every
    candidate is drawn from the seed and its index alone, so any set of indices is a sample of the same space."""
    parts = [json.loads(p.read_text()) for p in paths]
    saved = {**parts[0], "seconds": sum(p["seconds"] for p in parts), "complete": all(p["complete"] for p in parts)}
    for key in ("values", "shapes", "costs"):
        saved[key] = [v for p in parts for v in p[key]]
    return saved


def pool_of(saved: dict, seed: int) -> Pool:
    """The recorded pool in the order drawn from ``seed``; costs relative to their mean."""
    order = np.random.default_rng(seed).permutation(len(saved["values"]))
    mean = statistics.mean(saved["costs"])
    values = [saved["values"][i] for i in order]
    return Pool([float(e) for e in range(1, saved["epochs"] + 1)], values, [v[-1] for v in values],
                [saved["costs"][i] / mean for i in order], [saved["shapes"][i] for i in order])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=120, help="architectures to record (default 120)")
    parser.add_argument("--epochs", type=int, default=20, help="epochs each (default 20)")
    parser.add_argument("--subset", type=int, default=300, help="training images used (default 300 of 1437)")
    parser.add_argument("--seeds", type=int, default=20, help="seeded orders replayed (default 20)")
    parser.add_argument("--first-seed", type=int, default=100, help="the first order's seed (default 100)")
    parser.add_argument("--workers", type=int, default=8, help="evaluation slots (default 8)")
    parser.add_argument("--curves", default=CURVES, help="the recorded curves (JSON): read if present; "
                        "several files, comma-separated, are replayed as one pool (recorded with --first)")
    parser.add_argument("--first", type=int, default=0, help="record from this candidate index on (default 0; a "
                        "second process records a second range into its own file)")
    parser.add_argument("--record-only", action="store_true", help="record the curves and stop")
    parser.add_argument("--partial", action="store_true", help="replay the curves recorded so far without recording "
                        "more (a recording still under way, in another process)")
    parser.add_argument("--output", default="early_stop_real")
    args = parser.parse_args(argv)
    paths = [Path(p) for p in args.curves.split(",")]
    path = paths[0]
    saved = merged(paths) if all(p.exists() for p in paths) else {}
    if not saved.get("complete") and not (args.partial and saved):
        saved = record(args.candidates, args.epochs, 0, args.subset, path, args.first)
    if args.record_only:
        return
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    runs: dict[str, list] = {name: [] for name in PRUNERS}
    for seed in seeds:
        pool = pool_of(saved, seed)
        for name, params in PRUNERS.items():
            runs[name].append(replay(pool, name, params, seed, args.workers))
    count, shapes = len(saved["values"]), sorted(set(saved["shapes"]))
    finals = sorted((c[-1] for c in saved["values"]), reverse=True)
    report = Report(args.output, "Early stopping on real training curves (digits, per-candidate schedules)",
                    command_line(argv, "early_stop_real.py"))
    if not saved.get("complete"):
        report.add(f"**A partial recording**: the {count} candidates recorded so far of a recording under way.")
    mix = ", ".join(f"{s} {saved['shapes'].count(s)}" for s in shapes)
    report.add(f"{count} chain architectures (at most 3 layers) trained {saved['epochs']} epochs on {saved['subset']} digits images with SGD (batches of 32) "
               f"under per-candidate learning-rate schedules ({mix}), "
               f"recorded once ({saved['seconds']:.0f} s on one CPU thread, `{path.name}`); finals from "
               f"{finals[-1]:.3f} to {finals[0]:.3f} (5th best {finals[4]:.3f}). Seeds {seeds.start}-{seeds.stop - 1}: "
               f"the pool in a seeded order on {args.workers} asynchronous slots, every pruner of "
               "`early_stop.py` with its parameters there.\n\n" + table(HEADERS, summarise(runs)))
    report.add("## Where `curve`'s epochs go\n\n" + table(WHERE_HEADERS, where(runs)))
    report.add("## `curve` at its defaults: coverage per schedule\n\n"
               + table(shapes, [[_percent(_coverage(runs["curve"], s)) for s in shapes]]))
    cells, passed = checks(runs, tuple(shapes))
    report.add("## The issue's checks for `curve` at its defaults\n\n"
               + table(["coverage 80-99%", "every shape >= 50%", "true best stopped <= 10% of runs",
                        "best within 0.5 points of none", ">= 1.5x fewer epochs", "all"],
                       [[*cells, "pass" if passed else "FAIL"]]))


if __name__ == "__main__":
    main()
