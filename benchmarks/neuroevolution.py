"""Weight searches (seed 001, DarwiNN): what each distribution method moves, how a generation's time splits and
scales over workers, and how far OpenAI-ES gets on digits. Writes ``benchmarks/results/neuroevolution.md``.

1. **Bytes per generation** of ``cu``, ``su`` and ``scalars`` against the parameters ``M`` (1e3..1e6), the
   population ``P`` and the workers ``N`` (``nas.neuroevolution.traffic``: each worker uploads what it made and
   downloads what the others made, 4-byte values), against sending the population's weights (``P x M``), and
   the ratio cu / su beside DarwiNN's claim (about 1/2: an allgather against an all-reduce).
2. **Compute per part** (one process): every part of a generation run one after the other (three times, the
   fastest kept), so the time of ``N`` parallel workers is the slowest part of each phase plus the update. This
   is the scaling the method allows when each worker has its own core; no communication is counted.
3. **The real engine** (``--engine``): weight searches on 1, 2, 4 evaluation slots (real Redis, Celery, control
   loop): time per generation and its split as the loop recorded it, and the bytes it measured on the wire.
   Strong scaling keeps ``P``, weak scaling keeps ``P / N``. On a machine with fewer cores than slots the
   slots share cores, and the efficiencies say so.
4. **Learning**: OpenAI-ES on digits with a 64-32-10 MLP, in one process: validation accuracy per generation.

Run: ``nice -n 10 .venv/bin/python benchmarks/neuroevolution.py [--engine] [--workers 1,2,4]``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.report import Report, command_line, table  # noqa: E402
from nas.neuroevolution import share, traffic  # noqa: E402

MLP = [64, 32, 10]


def kib(value: float) -> str:
    return f"{value / 1024:,.1f}"


def bytes_section(report: Report) -> None:
    rows = []
    for parameters in (1_000, 10_000, 100_000, 1_000_000):
        for population in (64, 256):
            for workers in (2, 4, 8):
                cu, su, scalars = (traffic(m, parameters, population, workers) for m in ("cu", "su", "scalars"))
                rows.append([f"{parameters:.0e}", population, workers, kib(cu["bytes"]), kib(su["bytes"]),
                             kib(scalars["bytes"]), kib(cu["weights_bytes"]), f"{cu['bytes'] / su['bytes']:.3f}"])
    report.add("## Bytes per generation (KiB, all workers together)\n\nEach worker uploads what it made and "
               "downloads what the others made (4-byte values). DarwiNN's claim: cu about 1/2 of su.\n\n" +
               table(["M", "P", "N", "cu", "su", "scalars", "population's weights", "cu / su"], rows))


def compute_section(report: Report, workers: list[int], layers: list[int], population: int,
                    per_worker: int) -> None:
    import torch

    from evaluators.neuroevolution import WeightEvolution, WeightRun
    from nas.neuroevolution import ESConfig

    torch.set_num_threads(1)

    def timed(repeats: int, work):
        """The fastest of ``repeats`` runs of ``work()`` and its value: other load only ever slows a run down,
        and on a shared machine it comes in bursts of seconds."""
        best, value = float("inf"), None
        for _ in range(repeats):
            started = time.perf_counter()
            value = work()
            best = min(best, time.perf_counter() - started)
        return best, value

    def generation_time(parts: int, pop: int, method: str, repeats: int = 3) -> dict[str, float]:
        evolution = WeightEvolution(WeightRun({"kind": "mlp", "layers": layers}, "digits",
                                              ESConfig("openai_es", pop, 0.05, True, 1), batch_size=256))
        size, g = evolution.size, evolution.generation
        evaluate, fitness = [], []
        for j in range(parts):
            seconds, values = timed(repeats, lambda: evolution.evaluate(g, share(pop, parts, j)))
            evaluate.append(seconds)
            fitness += values
        gradient, pieces = [], []
        for j in range(parts if method != "scalars" else 1):
            if method == "cu":
                span = share(size, parts, j)
                work = lambda: evolution.gradient_slice(g, fitness, span.start, span.stop)  # noqa: E731
            elif method == "su":
                work = lambda: evolution.gradient_slice(g, fitness, 0, size, share(pop, parts, j))  # noqa: E731
            else:
                work = lambda: evolution.gradient_slice(g, fitness, 0, size)  # noqa: E731
            seconds, piece = timed(repeats, work)
            gradient.append(seconds)
            pieces.append(piece)
        vectors = [piece["theta"] for piece in pieces]
        total_gradient = np.concatenate(vectors) if method == "cu" else np.sum(vectors, axis=0)
        update, _ = timed(1, lambda: evolution.apply({"theta": total_gradient}))
        total = max(evaluate) + max(gradient) + update
        return {"evaluate": max(evaluate), "gradient": max(gradient), "update": update, "total": total}

    generation_time(1, 8, "cu", 1)  # warm up: the dataset, the allocator, the first kernels
    size = sum(a * b + b for a, b in zip(layers, layers[1:]))
    for scaling, pop_of in (("strong (P fixed)", lambda n: population), ("weak (P / N fixed)",
                                                                       lambda n: per_worker * n)):
        rows = []
        for method in ("cu", "su", "scalars"):
            base = None
            for n in workers:
                t = generation_time(n, pop_of(n), method)
                base = base or t["total"]
                efficiency = base / (n * t["total"]) if scaling.startswith("strong") else base / t["total"]
                rows.append([method, n, pop_of(n), f"{t['evaluate']:.3f}", f"{t['gradient']:.3f}",
                             f"{t['update']:.4f}", f"{t['total']:.3f}", f"{efficiency:.2f}"])
        report.add(f"## Compute per part, {scaling}: MLP {'-'.join(map(str, layers))} (M = {size:,})\n\n"
                   "Seconds; each part runs three times in one process and keeps its fastest time, a generation "
                   "on N workers is the slowest part of each phase plus the update (no communication). "
                   "Efficiency: strong t1 / (N tN), "
                   "weak t1 / tN.\n\n" +
                   table(["method", "N", "P", "evaluate", "gradient", "update", "generation", "efficiency"], rows))


def engine_section(report: Report, workers: list[int], layers: list[int], population: int, per_worker: int,
                   generations: int) -> None:
    from benchmarks.stack import Node, Stack

    size = sum(a * b + b for a, b in zip(layers, layers[1:]))
    rows = []
    with Stack() as stack:
        from webapp.searches.models import WeightGeneration  # Django is set up by the stack

        for scaling, pop_of in (("strong", lambda n: population), ("weak", lambda n: per_worker * n)):
            for method in ("cu", "su", "scalars"):
                base = None
                for n in workers:
                    with stack.workers([Node(f"n{n}", slots=n)]) as pool:
                        config = {"kind": "weights", "network": {"kind": "mlp", "layers": layers}, "pool": pool,
                                  "weights": {"population": pop_of(n), "generations": generations,
                                              "method": method, "seed": 1}}
                        run = stack.run_search(f"{scaling} {method} {n}", config, timeout=1800)
                    gens = list(WeightGeneration.objects.filter(search_id=run.search_id).order_by("number"))[1:]
                    mean = {key: statistics.mean(g.timings[key] for g in gens)
                            for key in ("evaluate", "gather", "gradient", "update", "total")}
                    base = base or mean["total"]
                    efficiency = base / (n * mean["total"]) if scaling == "strong" else base / mean["total"]
                    measured = statistics.mean(g.traffic["bytes"] for g in gens)
                    model = statistics.mean(g.traffic["model_bytes"] for g in gens)
                    rows.append([scaling, method, n, pop_of(n), *(f"{mean[k]:.3f}" for k in
                                 ("evaluate", "gather", "gradient", "update", "total")), f"{efficiency:.2f}",
                                 kib(measured), kib(model), gens[-1].validation_accuracy and
                                 f"{gens[-1].validation_accuracy:.3f}"])
    report.add(f"## The real engine: MLP {'-'.join(map(str, layers))} (M = {size:,}), {generations} generations, "
               "mean over all but the first\n\nSeconds per generation as the loop recorded them; bytes measured "
               "on the wire (float64 slices, JSON fitness values) and the model's count (8-byte values).\n\n" +
               table(["scaling", "method", "N", "P", "evaluate", "gather", "gradient", "update", "generation",
                      "efficiency", "KiB measured", "KiB model", "val. acc."], rows))


def learning_section(report: Report, generations: int, population: int) -> None:
    import torch

    from evaluators.neuroevolution import WeightEvolution, WeightRun
    from nas.neuroevolution import ESConfig

    torch.set_num_threads(1)
    evolution = WeightEvolution(WeightRun({"kind": "mlp", "layers": MLP}, "digits",
                                          ESConfig("openai_es", population, 0.05, True, 0), "adam", 0.03))
    rows, started, reached = [], time.perf_counter(), None
    for g in range(1, generations + 1):
        evolution.step()
        if g % 25 == 0 or g == generations:
            accuracy = evolution.validate()
            if reached is None and accuracy >= 0.90:
                reached = (g, time.perf_counter() - started)
            rows.append([g, f"{accuracy:.4f}", f"{time.perf_counter() - started:.1f}"])
    note = (f"0.90 first reached at generation {reached[0]} after {reached[1]:.1f} s" if reached
            else "0.90 not reached")
    report.add(f"## Learning: OpenAI-ES, digits, MLP 64-32-10, P = {population}, sigma 0.05, Adam 0.03, batch 256, "
               f"one process, one thread\n\n{note}.\n\n" + table(["generation", "validation accuracy", "seconds"],
                                                                   rows))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--layers", default="64,512,512,10", help="the MLP of the scaling runs")
    parser.add_argument("--population", type=int, default=64, help="P of strong scaling")
    parser.add_argument("--per-worker", type=int, default=16, help="P / N of weak scaling")
    parser.add_argument("--engine", action="store_true", help="also run real weight searches (slow)")
    parser.add_argument("--generations", type=int, default=4, help="generations per engine run")
    parser.add_argument("--learning", type=int, default=300, help="generations of the learning run (0: none)")
    parser.add_argument("--no-compute", action="store_true", help="skip the compute-per-part tables")
    parser.add_argument("--output", default="neuroevolution")
    args = parser.parse_args(argv)
    workers = [int(n) for n in args.workers.split(",")]
    layers = [int(n) for n in args.layers.split(",")]
    report = Report(args.output, "Weight searches (seed 001): traffic, time split, scaling, learning",
                    command_line(argv, "neuroevolution.py"))
    bytes_section(report)
    if args.learning:
        learning_section(report, args.learning, 40)
    if not args.no_compute:
        compute_section(report, workers, layers, args.population, args.per_worker)
    if args.engine:
        engine_section(report, workers, layers, args.population, args.per_worker, args.generations)


if __name__ == "__main__":
    main()
