"""Schedule one network on one device: trace it, profile its stages, run the DP and the baselines, measure.

:func:`schedule_network` is what the evaluation worker (the ``latency`` objective), the ``schedule`` command and
the benchmark call. It measures the optimal schedule end to end against the sequential and greedy ones, and keeps
the optimal one only where it pays: a schedule measured slower than sequential execution falls back to it
(streams often give no overlap, pytorch#59692; on a CPU, threads may not either).
"""
from __future__ import annotations

import contextlib
import random
import statistics
import time
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from evaluators.inference.executor import ScheduledNet
from evaluators.inference.profile import MeasuredCost, ProfileCache, median_ms, shared_cache
from evaluators.inference.program import Program, network_program, operator_graph, trace
from nas.schedule import (
    Schedule,
    SearchStats,
    greedy_schedule,
    optimal_schedule,
    sequential_schedule,
)

#: The DP's limits for networks (IOS's defaults are of this order): stages of at most 4 operators, and blocks
#: (between chokepoints, which lose nothing) of at most 16 operators.
MAX_STAGE_SIZE = 4
BLOCK_SIZE = 16


@contextlib.contextmanager
def pinned_threads(device: torch.device, threads: int = 1) -> Iterator[None]:
    """On the CPU, ``threads`` intra-op threads while inside (concurrent stages bring their own inter-op
    threads, so operators do not fight over the cores); nothing on a GPU."""
    if device.type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def check_batch(batch: Any) -> int:
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= 4096:
        raise ValueError(f"batch: must be an integer in [1, 4096] (got {batch!r})")
    return batch


@torch.no_grad()
def schedule_network(model: nn.Module, shape: tuple[int, ...], device: torch.device, batch: int = 1, *,
                     repeats: int = 10, warmup: int = 3, cache: ProfileCache | None = None,
                     max_stage_size: int | None = MAX_STAGE_SIZE, block_size: int | None = BLOCK_SIZE,
                     seed: int = 0) -> dict[str, Any]:
    """The schedule report of ``model`` (an ``evaluators.blocks.Net`` on ``device``) for inputs of ``batch``
    images of ``shape``; JSON-ready: the optimal schedule, its modelled and measured latency against the
    sequential and greedy schedules, which one is ``chosen``, and what the search and the profiling cost."""
    check_batch(batch)
    model = model.eval()
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn((batch, *shape), generator=generator).to(device)
    report = schedule_program(network_program(model), model, x, repeats=repeats, warmup=warmup, cache=cache,
                              max_stage_size=max_stage_size, block_size=block_size)
    with pinned_threads(device):
        report["module_ms"] = median_ms(lambda: model(x), device, warmup, repeats)
    return report


@torch.no_grad()
def schedule_program(program: Program, modules: nn.Module, x: torch.Tensor, *, repeats: int = 10, warmup: int = 3,
                     cache: ProfileCache | None = None, max_stage_size: int | None = MAX_STAGE_SIZE,
                     block_size: int | None = BLOCK_SIZE) -> dict[str, Any]:
    """:func:`schedule_network` for any program (``modules`` holds its weights, on ``x``'s device); the report
    has no ``module_ms``."""
    device, batch = x.device, int(x.shape[0])
    modules = modules.eval()
    cache = cache if cache is not None else shared_cache(str(device))
    with pinned_threads(device):
        inputs = trace(program, x)
        graph = operator_graph(program, inputs)
        cost = MeasuredCost(program, inputs, device, batch, cache, warmup=max(1, warmup // 2),
                            repeats=max(3, repeats // 2))
        hits, misses = cache.hits, cache.misses
        try:
            started = time.perf_counter()
            stats = SearchStats()
            schedules = {"sequential": sequential_schedule(graph, cost), "greedy": greedy_schedule(graph, cost),
                         "optimal": optimal_schedule(graph, cost, max_stage_size=max_stage_size,
                                                     block_size=block_size, stats=stats)}
            total = time.perf_counter() - started
        finally:
            cost.close()
        measured = measure_schedules(modules, program, schedules, x, repeats, warmup)
    chosen = "optimal" if measured["optimal"] <= measured["sequential"] else "sequential"
    return {
        "device": str(device), "batch": batch, "chosen": chosen, "latency_ms": measured[chosen],
        "measured_ms": measured,
        "modelled_ms": {name: schedule.cost for name, schedule in schedules.items()},
        "schedule": schedules[chosen].to_dict(), "optimal": schedules["optimal"].to_dict(),
        "graph": {"ops": len(graph), "width": graph.width()},
        "search": {"seconds": total, "dp_seconds": stats.seconds, "states": stats.states,
                   "stages_costed": stats.stages_costed, "blocks": stats.blocks, "profiled": cost.measured,
                   "cache_hits": cache.hits - hits, "cache_misses": cache.misses - misses},
    }


def measure_schedule(model: nn.Module, program: Program, schedule: Schedule, x: torch.Tensor, repeats: int,
                     warmup: int) -> float:
    """The median milliseconds of one inference of ``model`` run by ``schedule`` (one CUDA graph on a GPU)."""
    net = ScheduledNet(model, program, schedule)
    try:
        run = net.graphed(x)
        return median_ms(lambda: run(x), x.device, warmup, repeats)
    finally:
        net.runner.close()


def measure_latency(model: nn.Module, shape: tuple[int, ...], device: torch.device,
                    options: dict[str, Any]) -> dict[str, Any]:
    """The metrics of the ``latency`` objective after training: ``latency`` (ms per inference of
    ``options["batch"]`` images by the chosen schedule, fp32, this process's shared profile cache) and
    ``schedule`` (the report without the duplicate optimal schedule when it was chosen); a scheduling failure
    is a note, ``latency_error``, not a failed evaluation."""
    try:
        report = schedule_network(model, tuple(shape), device, int(options.get("batch", 1)),
                                  repeats=int(options.get("repeats", 10)))
    except Exception as error:  # the network trained: its accuracy stands without a latency
        return {"latency_error": f"{type(error).__name__}: {error}"}
    if report["chosen"] == "optimal":
        report.pop("optimal")
    return {"latency": report["latency_ms"], "schedule": report}


def measure_schedules(model: nn.Module, program: Program, schedules: dict[str, Schedule], x: torch.Tensor,
                      repeats: int, warmup: int) -> dict[str, float]:
    """The median milliseconds of each schedule, timed in interleaved rounds (one run of each per round, in a
    shuffled order), so that a change of load on a shared machine weighs on every schedule alike."""
    nets = {name: ScheduledNet(model, program, schedule) for name, schedule in schedules.items()}
    try:
        runs = {name: net.graphed(x) for name, net in nets.items()}
        for run in runs.values():
            for _ in range(warmup):
                run(x)
        times: dict[str, list[float]] = {name: [] for name in runs}
        order = list(runs)
        shuffler = random.Random(0)  # each round in a new order: no schedule always runs first or last
        for _ in range(repeats):
            shuffler.shuffle(order)
            for name in order:
                times[name].append(median_ms(lambda: runs[name](x), x.device, 0, 1))
        return {name: float(statistics.median(values)) for name, values in times.items()}
    finally:
        for net in nets.values():
            net.runner.close()
