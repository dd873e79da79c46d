"""Early stopping: what each pruner saves and what it costs, at equal seeds and equal evaluation budgets.

Two parts, both driving the pruners (``nas.pruners``) exactly as the control loop does (report, should_stop,
complete), with ``--workers`` asynchronous evaluation slots simulated in time (a report costs one time unit
times a per-candidate cost factor, so slots free up out of order as on a real cluster):

- **simulated curves** (``nas.pruners.synthetic``, what ``evaluators/simulated.py`` reports): per seed, a pool of
  ``--candidates`` curves over ``--epochs`` epochs with known final values, evaluated in the same order by every
  pruner (equal budget: every candidate is started once);
- **real digits training**: ``--digits`` architectures of the chain space really trained on digits with PyTorch
  (CPU, one thread), their validation accuracy recorded every half epoch; then, per seed, the same pool in a
  seeded order is replayed through each pruner. Training is deterministic for a fixed seed, so a pruned
  candidate's curve is exactly the prefix of its full curve: replaying is training, minus the waiting.

Per pruner: epochs trained (median over seeds, and against ``none``), the best final value found (the true final
of the best fully trained candidate; median, and the median gap to ``none`` in percentage points), the share of
the true top 5 that was stopped (mean), the runs where any of the top 5 was stopped, the simulated wall time
(makespan in epoch units), and the pruner's own cost per report (report + should_stop, measured). The engine's
overhead per progress report (the message's JSON round trip and parse, plus the decision) is measured apart.
"""
from __future__ import annotations

import argparse
import heapq
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report import RESULTS, Report, command_line, render_png, table  # noqa: E402
from nas.pruners import get_pruner  # noqa: E402
from nas.pruners.synthetic import SyntheticCurve  # noqa: E402

PRUNERS: dict[str, dict[str, Any]] = {
    "none": {},
    "median": {"min_steps": 3, "min_completed": 5},
    "asha": {"min_steps": 2, "eta": 3},
    "curve": {"min_steps": 3, "k": 5, "threshold": 0.05, "upper": 1.0},
    "curve (audit 0.2)": {"min_steps": 3, "k": 5, "threshold": 0.05, "upper": 1.0, "audit": 0.2},
}
TOP = 5


class Pool:
    """Candidates to evaluate: each one's observed value per report step, its true final, its cost per report."""

    def __init__(self, steps: list[float], values: list[list[float]], finals: list[float], costs: list[float]) -> None:
        self.steps, self.values, self.finals, self.costs = steps, values, finals, costs


def simulated_pool(seed: int, candidates: int, epochs: int) -> Pool:
    rng = np.random.default_rng(seed)
    curves = [SyntheticCurve.draw(rng, float(epochs)) for _ in range(candidates)]
    steps = [float(e) for e in range(1, epochs + 1)]
    values = [[c.observe(s, rng) for s in steps] for c in curves]
    return Pool(steps, values, [c.final for c in curves], list(rng.lognormal(0.0, 0.3, candidates)))


def replay(pool: Pool, name: str, params: dict[str, Any], seed: int, workers: int) -> dict[str, Any]:
    """Evaluate the pool's candidates in order on ``workers`` slots under one pruner."""
    max_steps = pool.steps[-1]
    pruner = get_pruner(name.split(" ")[0], seed, "max", max_steps, **params)
    events: list[tuple[float, int, int]] = []
    order = iter(range(len(pool.finals)))
    for _ in range(workers):
        cid = next(order, None)
        if cid is not None:
            heapq.heappush(events, (pool.costs[cid] * pool.steps[0], cid, 0))
    trained: dict[int, float] = {}
    stopped: set[int] = set()
    spent, reports, end = 0.0, 0, 0.0
    while events:
        now, cid, index = heapq.heappop(events)
        end = max(end, now)
        mark = time.perf_counter()
        pruner.report(cid, pool.steps[index], pool.values[cid][index])
        decision = pruner.should_stop(cid)
        spent += time.perf_counter() - mark
        reports += 1
        last = index == len(pool.steps) - 1
        if decision.stop or last:
            pruner.complete(cid, None if decision.stop else pool.values[cid][index])
            trained[cid] = pool.steps[index]
            if decision.stop:
                stopped.add(cid)
            following = next(order, None)
            if following is not None:
                heapq.heappush(events, (now + pool.costs[following] * pool.steps[0], following, 0))
        else:
            gap = pool.steps[index + 1] - pool.steps[index]
            heapq.heappush(events, (now + pool.costs[cid] * gap, cid, index + 1))
    full = [c for c in trained if c not in stopped]
    chosen = max(full, key=lambda c: pool.values[c][-1])  # what the search reports as its best
    top = sorted(range(len(pool.finals)), key=lambda c: -pool.finals[c])[:TOP]
    return {"epochs": sum(trained.values()), "best": pool.finals[chosen], "top_stopped": len(stopped & set(top)) / TOP,
            "wall": end, "cost_us": 1e6 * spent / max(reports, 1), "audit": pruner.audit_report()}


def summarise(runs: dict[str, list[dict[str, Any]]]) -> list[list[str]]:
    base = runs["none"]
    rows = []
    for name, results in runs.items():
        epochs = statistics.median(r["epochs"] for r in results)
        ratio = statistics.median(b["epochs"] / r["epochs"] for r, b in zip(results, base))
        gap = statistics.median(100 * (b["best"] - r["best"]) for r, b in zip(results, base))
        audits = [r["audit"] for r in results if r["audit"]["finished"]]
        rate = (f"{sum(a['false_stops'] for a in audits)}/{sum(a['finished'] for a in audits)}" if audits else "-")
        rows.append([name, f"{epochs:.0f}", f"{ratio:.2f}x", f"{statistics.median(r['best'] for r in results):.4f}",
                     f"{gap:+.2f}", f"{100 * statistics.mean(r['top_stopped'] for r in results):.1f}%",
                     f"{100 * sum(r['top_stopped'] > 0 for r in results) / len(results):.0f}%",
                     f"{statistics.median(r['wall'] for r in results):.0f}",
                     f"{statistics.median(r['cost_us'] for r in results):.0f}", rate])
    return rows


HEADERS = ["pruner", "epochs trained (median)", "fewer epochs than none (median)", "best final found (median)",
           "gap to none (pp, median)", "top-5 stopped (mean)", "runs with a top-5 stopped", "wall (epoch units)",
           "pruner cost per report (us)", "audit: false stops / audited"]


def calibration(seeds: int, epochs: int) -> str:
    """How often the true final lies in the curve pruner's stated 90% interval, by the share of the curve seen."""
    from nas.pruners.extrapolation import Z90, predict

    rows = []
    for share in (0.25, 0.4, 0.6, 0.8):
        inside = total = 0
        width = []
        for seed in range(seeds):
            rng = np.random.default_rng(1000 + seed)
            for index in range(40):
                curve = SyntheticCurve.draw(rng, float(epochs))
                steps = [float(s) for s in range(1, max(int(share * epochs), 4) + 1)]
                made = predict(steps, [curve.observe(s, rng) for s in steps], float(epochs), seed, index)
                if made is None:
                    continue
                total += 1
                inside += abs(made[0] - curve.final) <= Z90 * made[1]
                width.append(2 * Z90 * made[1])
        rows.append([f"{share:.0%}", total, f"{inside / total:.3f}", f"{statistics.median(width):.3f}"])
    return table(["curve seen", "curves", "coverage of the 90% interval", "interval width (median)"], rows)


def engine_overhead(repeats: int = 2000) -> str:
    """Per progress report: the worker's message to JSON and back, the loop's parse, and each pruner's decision
    with 60 candidates known (the database write of the point is one UPDATE, see overhead.md)."""
    from webapp.messaging import messages  # noqa: E402 (no Django needed to build and parse messages)

    origin = messages.Origin(search=1, individual=2, number=3, task_id="t" * 32, node="node", device="cpu",
                             slot="node/cpu/0")
    progress = messages.Progress(origin, attempt=1, step=220, epoch=10.0, time=time.time(),
                                 metrics={"val_accuracy": 0.93, "val_loss": 0.21, "params": 120_000.0})
    mark = time.perf_counter()
    for _ in range(repeats):
        messages.parse(json.loads(json.dumps(messages.to_dict(progress))))
    message_us = 1e6 * (time.perf_counter() - mark) / repeats
    rows = [["message JSON round trip + parse", f"{message_us:.1f}"]]
    pool = simulated_pool(0, 61, 20)
    for name in ("median", "asha", "curve"):
        pruner = get_pruner(name, 0, "max", 20.0, **PRUNERS[name])
        for cid in range(60):
            for index, step in enumerate(pool.steps):
                pruner.report(cid, step, pool.values[cid][index])
            pruner.complete(cid, pool.values[cid][-1])
        timings = []
        for index, step in enumerate(pool.steps):
            mark = time.perf_counter()
            pruner.report(60, step, pool.values[60][index])
            pruner.should_stop(60)
            timings.append(time.perf_counter() - mark)
            state = time.perf_counter()
        mark = time.perf_counter()
        json.dumps(pruner.state_dict())
        save_ms = 1e3 * (time.perf_counter() - mark)
        rows.append([f"{name}: report + should_stop (median over 20 reports)", f"{1e6 * statistics.median(timings):.0f}"])
        rows.append([f"{name}: state_dict to JSON (61 curves of 20 points; once per collect)", f"{1e3 * save_ms:.0f}"])
        del state
    return table(["per progress report", "microseconds"], rows)


def digits_pool(count: int, epochs: int, seed: int) -> tuple[Pool, float]:
    """Train ``count`` chain architectures on digits, recording validation accuracy every half epoch."""
    import torch

    torch.set_num_threads(1)
    from evaluators.evaluate import evaluate
    from nas.spaces import space_from_config

    config = {"name": "chain", "max_layers": 3, "modules": 2}
    space = space_from_config(config)
    rng = np.random.default_rng(seed)
    values, costs, started = [], [], time.perf_counter()
    steps: list[float] = []
    for index in range(count):
        genome = space.sample(rng)
        seen: list[tuple[float, float]] = []
        mark = time.perf_counter()
        result = evaluate(genome, config, {"epochs": epochs, "batch_size": 64, "learning_rate": 0.0005, "seed": 1},
                          "digits", "cpu", report=lambda s, e, m: seen.append((e, m["val_accuracy"])) or False,
                          report_every=11)
        seen.append((float(epochs), result.fitness))
        steps = [e for e, _ in seen]
        values.append([v for _, v in seen])
        costs.append((time.perf_counter() - mark) / len(seen))
        print(f"  digits {index + 1}/{count}: {len(seen)} reports, final {result.fitness:.3f}", flush=True)
    mean_cost = statistics.mean(costs)
    return Pool(steps, values, [v[-1] for v in values], [c / mean_cost for c in costs]), time.perf_counter() - started


def reorder(pool: Pool, seed: int) -> Pool:
    order = np.random.default_rng(seed).permutation(len(pool.finals))
    return Pool(pool.steps, [pool.values[i] for i in order], [pool.finals[i] for i in order],
                [pool.costs[i] for i in order])


def plot(runs: dict[str, list[dict[str, Any]]], path: Path) -> Path | None:
    try:
        import plotly.graph_objects as go
    except ImportError:
        return None
    figure = go.Figure()
    base = {id(r): r for r in runs["none"]}
    del base
    for name, results in runs.items():
        figure.add_trace(go.Scatter(x=[r["epochs"] for r in results], y=[r["best"] for r in results], mode="markers",
                                    name=name, marker={"size": 9}))
    figure.update_layout(title="Early stopping on simulated curves: epochs trained against best final found "
                               "(one point per seed)", xaxis={"title": "epochs trained"},
                         yaxis={"title": "best final found (true value)"}, width=900, height=600)
    html = path.with_suffix(".html")
    figure.write_html(str(html), include_plotlyjs=True)
    try:
        if render_png(html, path.with_suffix(".png")):
            html.unlink()
            return path.with_suffix(".png")
    except Exception as error:  # no browser: the HTML stays (not committed)
        print(f"  no PNG ({error})")
    return html


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20, help="seeds per part (default 20; at least 10)")
    parser.add_argument("--candidates", type=int, default=100, help="simulated candidates per seed (default 100)")
    parser.add_argument("--epochs", type=int, default=20, help="simulated epochs per candidate (default 20)")
    parser.add_argument("--workers", type=int, default=8, help="evaluation slots (default 8)")
    parser.add_argument("--digits", type=int, default=24, help="real digits architectures (0: skip; default 24)")
    parser.add_argument("--digits-epochs", type=int, default=6, help="epochs per digits architecture (default 6)")
    parser.add_argument("--digits-pool", default=None,
                        help="a JSON file of recorded digits curves: read if it exists, else written after training")
    parser.add_argument("--output", default="early_stop")
    args = parser.parse_args(argv)
    report = Report(args.output, "Early stopping: pruners at equal seeds and budgets", command_line(argv, "early_stop.py"))
    report.add("Pruners' parameters: " + "; ".join(f"`{n}` {json.dumps(p)}" for n, p in PRUNERS.items()))
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in PRUNERS}
    for seed in range(args.seeds):
        pool = simulated_pool(seed, args.candidates, args.epochs)
        for name, params in PRUNERS.items():
            runs[name].append(replay(pool, name, params, seed, args.workers))
    report.add(f"## Simulated curves\n\n{args.seeds} seeds, {args.candidates} candidates of {args.epochs} epochs "
               f"each, reports once per epoch, {args.workers} asynchronous slots.\n\n" + table(HEADERS, summarise(runs)))
    saved = plot(runs, RESULTS / args.output)
    if saved is not None:
        report.add(f"Plot: `{saved.relative_to(RESULTS.parent.parent)}`")
    report.add("## Calibration of the curve pruner's 90% interval (synthetic curves, known finals)\n\n"
               + calibration(max(args.seeds // 2, 5), args.epochs))
    report.add("## Engine overhead per progress report\n\n" + engine_overhead())
    if args.digits:
        cached = Path(args.digits_pool) if args.digits_pool else None
        if cached is not None and cached.exists():
            saved = json.loads(cached.read_text())
            pool, seconds = Pool(saved["steps"], saved["values"], saved["finals"], saved["costs"]), saved["seconds"]
        else:
            pool, seconds = digits_pool(args.digits, args.digits_epochs, 0)
            if cached is not None:
                cached.write_text(json.dumps({"steps": pool.steps, "values": pool.values, "finals": pool.finals,
                                              "costs": pool.costs, "seconds": seconds}))
        digits_runs: dict[str, list[dict[str, Any]]] = {name: [] for name in PRUNERS}
        for seed in range(args.seeds):
            shuffled = reorder(pool, seed)
            for name, params in PRUNERS.items():
                digits_runs[name].append(replay(shuffled, name, params, seed, min(args.workers, 4)))
        report.add(f"## Real digits training\n\n{args.digits} chain architectures (max 3 layers) trained for "
                   f"{args.digits_epochs} epochs on digits (CPU, one thread, {seconds:.0f} s in all), validation "
                   f"accuracy every 11 steps (half an epoch); {args.seeds} seeded orders of that pool replayed "
                   f"through each pruner on {min(args.workers, 4)} slots. The best final is the observed "
                   f"accuracy (no hidden truth here).\n\n" + table(HEADERS, summarise(digits_runs)))


if __name__ == "__main__":
    main()
