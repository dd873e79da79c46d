"""Running a network stage by stage: concurrent stages side by side, merged stages as one wider operator.

On a GPU, a stage's operators run on CUDA streams of their own, ordered by events against the main stream:
nothing synchronises the device between stages (IOS does after each). :meth:`ScheduledNet.graphed` captures the
whole schedule as one CUDA graph when shapes are static, so launches cost nothing on the CPU side. On the CPU, a
concurrent stage's operators run on a thread pool (inter-op parallelism; PyTorch releases the GIL inside its
kernels); the intra-op thread count is the caller's (``torch.set_num_threads``): the profiler and the benchmark
pin it to 1 so that concurrent operators do not fight over the cores.

Merging (inference only, on eval-mode weights): convolutions of one kind reading the same node become one
convolution with their weights concatenated along the output channels, one batch norm over the concatenated
statistics, then a split; average pools reading the same node are computed once.
"""
from __future__ import annotations

import concurrent.futures
from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F

from nas.schedule import MERGED, Schedule
from evaluators.inference.program import INPUT, Program, ProgramOp


class MergedConvs(nn.Module):
    """ReLU -> one convolution with the concatenated weights -> batch norm (eval statistics) -> split."""

    def __init__(self, modules: list[nn.Sequential]) -> None:
        super().__init__()
        convs = [m[1] for m in modules]
        norms = [m[2] for m in modules]
        self.splits = [conv.out_channels for conv in convs]
        self.padding, self.stride = convs[0].padding, convs[0].stride
        self.register_buffer("weight", torch.cat([c.weight.detach() for c in convs]))
        for field in ("running_mean", "running_var", "weight", "bias"):
            self.register_buffer(f"bn_{field}", torch.cat([getattr(n, field).detach() for n in norms]))
        self.eps = norms[0].eps

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        y = F.conv2d(F.relu(x), self.weight, None, self.stride, self.padding)
        y = F.batch_norm(y, self.bn_running_mean, self.bn_running_var, self.bn_weight, self.bn_bias, False, 0.0,
                         self.eps)
        return list(torch.split(y, self.splits, 1))


def merge(ops: list[ProgramOp]) -> Callable[[torch.Tensor], list[torch.Tensor]]:
    """One callable computing every output of ``ops`` (one merge group) from their shared input."""
    kind = ops[0].kind
    if kind == "avg_pool_3x3":
        pool = ops[0].module
        return lambda x: [pool(x)] * len(ops)
    if kind in ("conv_1x1", "conv_3x3"):
        return MergedConvs([op.module for op in ops])
    raise ValueError(f"operators of kind {kind!r} cannot be merged")


class StageRunner:
    """Runs stages of a program on one device: the thread pool or the streams concurrent stages use."""

    def __init__(self, program: Program, device: torch.device, width: int) -> None:
        self.program, self.device = program, device
        self.ops = program.by_name()
        self.width = max(width, 1)
        self.pool = (concurrent.futures.ThreadPoolExecutor(self.width, thread_name_prefix="stage")
                     if device.type == "cpu" and self.width > 1 else None)
        self.streams = ([torch.cuda.Stream(device) for _ in range(self.width)]
                        if device.type == "cuda" and self.width > 1 else [])
        self.merged: dict[tuple[str, ...], Callable] = {}

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True)

    def run(self, names: tuple[str, ...], strategy: str, values: dict[str, torch.Tensor]) -> None:
        """Compute ``names``' outputs into ``values`` (their inputs must be there)."""
        if strategy == MERGED and len(names) > 1:
            fused = self.merged.get(names)
            if fused is None:
                fused = self.merged[names] = merge([self.ops[name] for name in names])
            outputs = fused(self.ops[names[0]].source.evaluate(values))
            values.update(zip(names, outputs))
            return
        if len(names) == 1 or (self.pool is None and not self.streams):
            for name in names:
                op = self.ops[name]
                values[name] = op.module(op.source.evaluate(values))
            return
        if self.streams:
            self._on_streams(names, values)
            return
        futures = [self.pool.submit(self._one, name, values) for name in names]
        for name, future in zip(names, futures):
            values[name] = future.result()

    def _one(self, name: str, values: dict[str, torch.Tensor]) -> torch.Tensor:
        op = self.ops[name]
        with torch.no_grad():
            return op.module(op.source.evaluate(values))

    def _on_streams(self, names: tuple[str, ...], values: dict[str, torch.Tensor]) -> None:
        main = torch.cuda.current_stream(self.device)
        outputs = {}
        for k, name in enumerate(names):
            stream = self.streams[k % len(self.streams)]
            stream.wait_stream(main)  # the inputs were written on the main stream
            with torch.cuda.stream(stream):
                outputs[name] = self._one(name, values)
        for stream in self.streams[:len(names)]:
            main.wait_stream(stream)  # an event wait on the device: the host never blocks
        if not torch.cuda.is_current_stream_capturing():  # a captured graph owns its memory already
            for value in outputs.values():
                value.record_stream(main)  # made on a side stream, freed on the main one
        values.update(outputs)


class ScheduledNet(nn.Module):
    """A network run by a schedule; the same outputs as the network itself (in eval mode).

    Args:
        model: an ``evaluators.blocks.Net``, put in eval mode (merged weights are read once, here).
        program: its program (``evaluators.inference.program.network_program``).
        schedule: a schedule of the program's operator graph.
    """

    def __init__(self, model: nn.Module, program: Program, schedule: Schedule) -> None:
        super().__init__()
        self.model = model.eval()
        self.program, self.schedule = program, schedule
        device = next(model.parameters()).device
        self.runner = StageRunner(program, device, max(len(s.ops) for s in schedule.stages))

    @torch.no_grad()
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values = {INPUT: self.program.normalize(x) if self.program.normalize else x}
        for stage in self.schedule.stages:
            self.runner.run(stage.ops, stage.strategy, values)
        return self.program.output.evaluate(values)

    def graphed(self, example: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
        """On a GPU, the schedule captured as one CUDA graph for inputs shaped like ``example`` (replayed with
        one launch); ``self`` unchanged on the CPU or where capture fails (dynamic shapes, unsupported ops)."""
        if example.device.type != "cuda":
            return self
        try:
            static_in = example.clone()
            side = torch.cuda.Stream(example.device)
            side.wait_stream(torch.cuda.current_stream(example.device))
            with torch.cuda.stream(side):
                for _ in range(3):  # warm-up on a side stream, as torch.cuda.graphs asks before capture
                    self(static_in)
            torch.cuda.current_stream(example.device).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_out = self(static_in)
        except Exception:  # a schedule that cannot be captured still runs, uncaptured
            return self

        def replay(x: torch.Tensor) -> torch.Tensor:
            static_in.copy_(x)
            graph.replay()
            return static_out

        return replay
