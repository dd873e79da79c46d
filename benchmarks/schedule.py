"""Seed 002 on our networks: modelled and measured latency of the sequential, greedy and optimal schedules,
the DP's search time against graph width (with and without pruning), and the batch-size specialisation table.

    nice -n 10 .venv/bin/python benchmarks/schedule.py [--device cpu] [--repeats 20] [--quick]

Networks: random cells of the ``cell`` space (CIFAR-shaped input), an Inception-like block (wide: parallel
1x1, 1x1->3x3, 3x3->3x3 and pool->1x1 branches off one input, joined by a sum) and a RandWire-like block (a
random DAG of ReLU-conv-BN nodes, each summing its inputs). On the CPU a concurrent stage runs its operators on
threads with one intra-op thread each (``evaluators.inference.executor``). Writes
``benchmarks/results/schedule.md``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from benchmarks.report import Report, command_line, table  # noqa: E402
from evaluators.blocks import Net, relu_conv_bn  # noqa: E402
from evaluators.builders import architecture  # noqa: E402
from evaluators.inference.network import measure_schedule, measure_schedules, pinned_threads, schedule_program  # noqa: E402
from evaluators.inference.profile import MeasuredCost, ProfileCache  # noqa: E402
from evaluators.inference.program import (  # noqa: E402
    INPUT,
    Expression,
    Program,
    ProgramOp,
    network_program,
    operator_graph,
    trace,
)
from nas.schedule import ModelledCost, Op, OpGraph, SearchStats, optimal_schedule, random_schedule  # noqa: E402
from nas.spaces.cell import CellSpace  # noqa: E402


def _conv(name: str, source: Expression, channels: int, kernel: int, group: str = "") -> ProgramOp:
    kind = f"conv_{kernel}x{kernel}"
    return ProgramOp(name, relu_conv_bn(channels, channels, kernel), source, kind, f"channels={channels}",
                     merge_group=f"{kind}@{group}" if group else "")


def inception_block(channels: int, branches: int) -> tuple[Program, nn.Module]:
    """``branches`` groups of four Inception branches off one input: 1x1; 1x1->3x3; 3x3->3x3; pool->1x1;
    every branch's output summed (a sum, not a concatenation: our programs join by sums)."""
    x = Expression((INPUT,))
    ops: list[ProgramOp] = []
    ends = []
    for b in range(branches):
        ops.append(_conv(f"b{b}.1x1", x, channels, 1, "x"))
        ops.append(_conv(f"b{b}.reduce", x, channels, 1, "x"))
        ops.append(_conv(f"b{b}.3x3", Expression((f"b{b}.reduce",)), channels, 3))
        ops.append(_conv(f"b{b}.3x3a", x, channels, 3, "x"))
        ops.append(_conv(f"b{b}.3x3b", Expression((f"b{b}.3x3a",)), channels, 3))
        ops.append(ProgramOp(f"b{b}.pool", nn.AvgPool2d(3, 1, 1, count_include_pad=False), x, "avg_pool_3x3", "",
                             merge_group="avg_pool_3x3@x"))
        ops.append(_conv(f"b{b}.poolproj", Expression((f"b{b}.pool",)), channels, 1))
        ends += [f"b{b}.1x1", f"b{b}.3x3", f"b{b}.3x3b", f"b{b}.poolproj"]
    return Program(ops, Expression(tuple(ends))), nn.ModuleList([op.module for op in ops])


def randwire_block(channels: int, nodes: int, seed: int, k: int = 4, p: float = 0.75) -> tuple[Program, nn.Module]:
    """A Watts-Strogatz graph (``nodes`` nodes, ``k`` neighbours, rewiring ``p``, as RandWire), its edges
    oriented from lower to higher index; a node sums its inputs (the block's input when it has none) and applies
    ReLU-conv3x3-BN; the output sums the nodes nothing reads."""
    rng = np.random.default_rng(seed)
    edges = set()
    for i in range(nodes):
        for j in range(1, k // 2 + 1):
            a, b = i, (i + j) % nodes
            if rng.random() < p:
                b = int(rng.integers(nodes))
                while b == a or (min(a, b), max(a, b)) in edges:
                    b = int(rng.integers(nodes))
            edges.add((min(a, b), max(a, b)))
    ops = []
    read = set()
    for node in range(nodes):
        inputs = tuple(f"n{a}" for a, b in sorted(edges) if b == node)
        read.update(inputs)
        ops.append(_conv(f"n{node}", Expression(inputs or (INPUT,)), channels, 3))
    ends = tuple(f"n{n}" for n in range(nodes) if f"n{n}" not in read)
    return Program(ops, Expression(ends)), nn.ModuleList([op.module for op in ops])


def random_cells(count: int, seed: int) -> list[tuple[str, Program, nn.Module]]:
    rng = np.random.default_rng(seed)
    space = {"name": "cell", "cells_per_stage": 2, "stages": 3, "channels": 32}
    cells = []
    for _ in range(count):
        genome = CellSpace().sample(rng)
        model = Net(architecture(genome, space, "cifar10"))
        ops = ", ".join(f"{edge}:{op}" for edge, op in genome["edges"].items() if op != "none")
        cells.append((f"cell ({ops}), 2x3 cells, 32 ch, 32x32", network_program(model), model))
    return cells


def _randomize(modules: nn.Module) -> nn.Module:
    for module in modules.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_var.uniform_(0.5, 1.5)
    return modules.eval()


def latency_rows(networks, shape, device, repeats, cache):
    rows = []
    for name, program, modules in networks:
        x = torch.randn(1, *shape, device=device)
        report = schedule_program(program, _randomize(modules.to(device)), x, repeats=repeats, warmup=3, cache=cache)
        m, t = report["measured_ms"], report["modelled_ms"]
        rows.append([name, report["graph"]["ops"], report["graph"]["width"],
                     *(f"{t[k]:.3f}" for k in ("sequential", "greedy", "optimal")),
                     *(f"{m[k]:.3f}" for k in ("sequential", "greedy", "optimal")),
                     f"{m['sequential'] / m['optimal']:.2f}x", f"{t['sequential'] / t['optimal']:.2f}x",
                     report["chosen"] + (" (opt = seq)" if len(report["optimal"]["stages"]) == report["graph"]["ops"]
                                         else ""),
                     f"{report['search']['seconds']:.2f}",
                     f"{report['search']['profiled']}/{report['search']['cache_hits']}"])
    return rows


def chains(width: int, length: int = 3) -> OpGraph:
    """``width`` parallel chains of ``length`` operators between an input and an output operator."""
    rng = np.random.default_rng(width)
    ops = [Op("in")]
    for c in range(width):
        previous = "in"
        for step in range(length):
            name = f"c{c}.{step}"
            ops.append(Op(name, (previous,), merge_group=f"k{step}@{previous}" if step == 0 else "",
                          work=float(rng.uniform(0.5, 2.0))))
            previous = name
    ops.append(Op("out", tuple(f"c{c}.{length - 1}" for c in range(width))))
    return OpGraph(ops)


def search_time_rows(widths, limit_seconds):
    """Per width, the DP without limits, with stages of at most 3, and with blocks of at most 12 as well; a
    column stops where its search would take longer than ``limit_seconds`` (the states grow about 4x per
    unit of width here, so the time is extrapolated from the last width run)."""
    rows = []
    cost = ModelledCost(peak=8.0, lanes=8, launch=0.05)
    columns = {"none": {}, "stage<=3": {"max_stage_size": 3},
               "stage<=3, block<=12": {"max_stage_size": 3, "block_size": 12}}
    last = dict.fromkeys(columns, (1, 0.0))
    for width in widths:
        graph = chains(width)
        row = [width, len(graph)]
        for label, limits in columns.items():
            # without blocks the states grow 4x per unit of width; with blocks, about polynomially
            growth = (4 ** (width - last[label][0]) if "block" not in label else (width / last[label][0]) ** 3)
            predicted = last[label][1] * growth
            if predicted > limit_seconds:
                row += [f"not run (> {limit_seconds:.0f} s extrapolated)", "", ""]
                continue
            stats = SearchStats()
            schedule = optimal_schedule(graph, cost, stats=stats, **limits)
            row += [f"{stats.seconds:.3f}", stats.states, f"{schedule.cost:.3f}"]
            last[label] = (width, stats.seconds)
        rows.append(row)
    return rows


def order_accuracy(program, modules, shape, device, repeats, count, seed=0):
    """The seed's section 5.7: over random valid schedules, how often the sum of the stages' measured latencies
    orders a pair of schedules as their end-to-end latency does."""
    modules = _randomize(modules.to(device))
    x = torch.randn(1, *shape, device=device)
    rng = np.random.default_rng(seed)
    with pinned_threads(device):
        inputs = trace(program, x)
        graph = operator_graph(program, inputs)
        cost = MeasuredCost(program, inputs, device, 1, ProfileCache(), repeats=repeats)
        schedules = {f"s{i}": random_schedule(graph, cost, rng, max_stage_size=4) for i in range(count)}
        cost.close()
        measured = measure_schedules(modules, program, schedules, x, repeats, 3)
    names = list(schedules)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    agree = sum((schedules[a].cost < schedules[b].cost) == (measured[a] < measured[b]) for a, b in pairs)
    return agree / len(pairs), len(pairs)


def specialisation(program, modules, shape, device, repeats, batches=(1, 8)):
    """Rows: the batch it runs at; columns: the batch its schedule was optimised for (measured ms)."""
    modules = _randomize(modules.to(device))
    schedules = {}
    for batch in batches:
        x = torch.randn(batch, *shape, device=device)
        with pinned_threads(device):
            inputs = trace(program, x)
            graph = operator_graph(program, inputs)
            cost = MeasuredCost(program, inputs, device, batch, ProfileCache(), repeats=repeats)
            schedules[batch] = optimal_schedule(graph, cost, max_stage_size=4, block_size=16)
            cost.close()
    rows = []
    for run_batch in batches:
        x = torch.randn(run_batch, *shape, device=device)
        with pinned_threads(device):
            rows.append([f"runs at batch {run_batch}", *(f"{measure_schedule(modules, program, schedules[b], x, repeats, 3):.3f}"
                                                          for b in batches)])
    same = [len(s.stages) for s in schedules.values()]
    return rows, schedules, same


def modelled_specialisation(graph: OpGraph) -> list[list[str]]:
    """The seed's Table 1 on modelled devices: a narrow one (2 lanes) and a wide one (16 lanes)."""
    devices = {"narrow (2 lanes)": ModelledCost(peak=2.0, lanes=2, launch=0.2),
               "wide (16 lanes)": ModelledCost(peak=16.0, lanes=16, launch=0.2)}
    best = {name: optimal_schedule(graph, cost) for name, cost in devices.items()}
    rows = []
    for run_on, cost in devices.items():
        row = [f"runs on {run_on}"]
        for made_for in devices:
            total = sum(cost.stage(graph, stage.ops)[0] for stage in best[made_for].stages)
            row.append(f"{total:.3f}")
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="fewer networks and widths (a smoke run)")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    torch.manual_seed(0)
    report = Report("schedule", "Inference schedules (seed 002): sequential, greedy and optimal",
                    command_line(argv, "schedule.py"))
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "none (CPU run)"
    report.add(f"Device: {device} ({gpu}); torch {torch.__version__}; intra-op threads during measurements: 1, "
               f"a concurrent stage's operators on a thread pool (CPU) or CUDA streams (GPU).")

    cache = ProfileCache()
    networks = random_cells(1 if args.quick else 3, seed=2)
    networks.append(("Inception-like, 4 groups x 4 branches, 64 ch, 16x16", *inception_block(64, 4)))
    networks.append(("Inception-like, 2 groups x 4 branches, 32 ch, 8x8 (small)", *inception_block(32, 2)))
    networks.append(("RandWire-like WS(16, 4, 0.75), 32 ch, 16x16", *randwire_block(32, 16, seed=1)))
    headers = ["network", "ops", "width", "modelled seq", "modelled greedy", "modelled opt", "measured seq",
               "measured greedy", "measured opt", "measured seq/opt", "modelled seq/opt", "chosen", "search s",
               "profiled/cache hits"]
    rows = []
    for name, program, modules in networks:
        shape = (3, 32, 32) if name.startswith("cell") else (
            (32, 8, 8) if "small" in name else (64, 16, 16) if "Inception" in name else (32, 16, 16))
        rows += latency_rows([(name, program, modules)], shape, device, args.repeats, cache)
    report.add("## Latency at batch 1 (ms; modelled = the sum of the stages' latencies measured alone; measured = "
               "the whole schedule, median of interleaved runs)\n\n" + table(headers, rows))

    widths = [2, 3, 4, 5, 6] if args.quick else [2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 24]
    started = time.perf_counter()
    rows = search_time_rows(widths, limit_seconds=30.0)
    report.add(f"## DP search time against width (parallel chains of 3 ops, modelled device; "
               f"{time.perf_counter() - started:.1f} s in all)\n\n" + table(
                   ["width", "ops", "no limit s", "states", "cost", "stage<=3 s", "states", "cost",
                    "stage<=3 + block<=12 s", "states", "cost"], rows))

    for label, (program, modules), shape in (
            ("Inception-like, 4 groups x 4 branches, 64 ch, 16x16", inception_block(64, 4), (64, 16, 16)),
            ("RandWire-like WS(16, 4, 0.75), 32 ch, 16x16", randwire_block(32, 16, seed=1), (32, 16, 16))):
        rows, schedules, stages = specialisation(program, modules, shape, device, args.repeats)
        report.add(f"## Batch specialisation, {label} (measured ms; columns: the batch the schedule was "
                   f"optimised for; stages: {stages})\n\n" + table(["", "optimised for 1", "optimised for 8"], rows))

    accuracy, pairs = order_accuracy(*inception_block(32, 2), (32, 8, 8), device, args.repeats,
                                     count=6 if args.quick else 16)
    report.add(f"## Does the sum of stage latencies order schedules? (seed 002, section 5.7: 0.937 on a V100)\n\n"
               f"Inception-like small block, random valid schedules: pairwise order accuracy **{accuracy:.3f}** "
               f"over {pairs} pairs.")

    graph = chains(6)
    report.add("## Device specialisation on modelled devices (6 parallel chains; modelled ms)\n\n" + table(
        ["", "made for narrow", "made for wide"], modelled_specialisation(graph)))


if __name__ == "__main__":
    main()
