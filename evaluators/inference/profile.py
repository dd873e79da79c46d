"""Measured stage costs: each stage of operators timed on the device, cached by what fixes its cost.

A stage is timed on the inputs a traced forward pass gave its operators: warm-up runs, then ``repeats`` runs,
and the median (CUDA events on a GPU, the wall clock after a synchronisation on the CPU). The cache key is
(device, batch size, strategy, the sorted signatures of the stage's operators): operators with equal signatures
(kind, arguments, input shape) cost the same in any network, so once a population's common stages are measured,
scheduling another cell of it costs look-ups, not profiling runs.
"""
from __future__ import annotations

import dataclasses
import statistics
import threading
import time
from typing import Any

import torch

from evaluators.inference.executor import StageRunner
from evaluators.inference.program import Expression, Program
from nas.schedule import CONCURRENT, MERGED, CostModel, OpGraph
from nas.schedule.cost import mergeable


class ProfileCache:
    """Measured stage latencies (milliseconds) by key; thread-safe, JSON-ready, with hit and miss counts."""

    def __init__(self, entries: dict[str, float] | None = None) -> None:
        self.entries: dict[str, float] = dict(entries or {})
        self.hits = self.misses = 0
        self._lock = threading.Lock()

    @staticmethod
    def key(device: str, batch: int, strategy: str, signatures: list[str]) -> str:
        return f"{device}|b{batch}|{strategy}|" + " + ".join(sorted(signatures))

    def get(self, key: str) -> float | None:
        with self._lock:
            found = self.entries.get(key)
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
            return found

    def put(self, key: str, value: float) -> None:
        with self._lock:
            self.entries[key] = value

    def to_dict(self) -> dict[str, Any]:
        return {"entries": dict(self.entries), "hits": self.hits, "misses": self.misses}


_SHARED: dict[str, ProfileCache] = {}


def shared_cache(device: str) -> ProfileCache:
    """This process's cache for ``device``: every evaluation of an evaluation slot shares it (a slot is one
    process on one device, so nothing here is shared across devices or processes)."""
    return _SHARED.setdefault(device, ProfileCache())


class MeasuredCost(CostModel):
    """Stage costs measured on ``device`` at ``batch`` images, through ``cache``.

    Args:
        program: the network's program; ``inputs``: each operator's traced input tensor at that batch size.
        warmup, repeats: runs before timing, and timed runs (the median is kept).
    """

    def __init__(self, program: Program, inputs: dict[str, torch.Tensor], device: torch.device, batch: int,
                 cache: ProfileCache, warmup: int = 2, repeats: int = 5) -> None:
        self.program, self.inputs, self.device, self.batch = program, inputs, device, batch
        self.cache, self.warmup, self.repeats = cache, warmup, repeats
        self.runner = StageRunner(program, device, width=8)
        # the timing runner reads each operator's input ready-made, under the name "in:<operator>"
        self.runner.ops = {op.name: dataclasses.replace(op, source=Expression((f"in:{op.name}",)))
                           for op in program.ops}
        self.measured = 0

    def close(self) -> None:
        self.runner.close()

    def _cost(self, graph: OpGraph, ops: tuple[str, ...], strategy: str) -> float:
        signatures = [graph.by_name[name].signature for name in ops]
        key = ProfileCache.key(str(self.device), self.batch, strategy, signatures)
        found = self.cache.get(key)
        if found is None:
            found = self.time_stage(ops, strategy)
            self.cache.put(key, found)
        return found

    def concurrent(self, graph: OpGraph, ops: tuple[str, ...]) -> float:
        return self._cost(graph, ops, CONCURRENT)

    def merged(self, graph: OpGraph, ops: tuple[str, ...]) -> float | None:
        return self._cost(graph, ops, MERGED) if mergeable(graph, ops) else None

    @torch.no_grad()
    def time_stage(self, ops: tuple[str, ...], strategy: str) -> float:
        """The median milliseconds of one run of the stage, on its operators' traced inputs (what is timed is
        the operators, not the sums that form their inputs)."""
        self.measured += 1
        values = {f"in:{name}": self.inputs[name] for name in ops}
        return median_ms(lambda: self.runner.run(ops, strategy, dict(values)), self.device, self.warmup,
                         self.repeats)


def median_ms(run, device: torch.device, warmup: int, repeats: int) -> float:
    """The median milliseconds of ``run()`` after ``warmup`` untimed runs."""
    for _ in range(warmup):
        run()
    times = []
    if device.type == "cuda":
        stream = torch.cuda.current_stream(device)
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(stream)
            run()
            end.record(stream)
            end.synchronize()
            times.append(start.elapsed_time(end))
    else:
        for _ in range(repeats):
            started = time.perf_counter()
            run()
            times.append((time.perf_counter() - started) * 1000)
    return float(statistics.median(times))
