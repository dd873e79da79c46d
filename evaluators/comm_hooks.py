"""The gradient exchange of a gang's rank: :func:`register` puts the configured compression
(:mod:`evaluators.compression`) on a ``DistributedDataParallel`` model as its communication hook, and every hook
counts what it sends (:class:`evaluators.sparse_allreduce.Traffic`).

``none``, ``fp16`` and ``powersgd`` are PyTorch's own hooks (``default_hooks.allreduce_hook``,
``default_hooks.fp16_compress_hook``, ``powerSGD_hook.powerSGD_hook``), used as they are: their bytes are counted
per ``all_reduce`` they call (a ring AllReduce sends ``2 (k-1) / k`` of the tensor per rank), by standing in for
``torch.distributed.all_reduce`` while the hook runs. ``segment_topk`` counts its own
(:mod:`evaluators.sparse_allreduce`).

Every hook is waited for inside itself, so that the time it takes is the step's communication time and the rest
is compute: the exchange then no longer overlaps the backward pass of later buckets (the small models of these
searches fit one bucket, where nothing overlaps anyway).
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook

from evaluators.compression import Compression
from evaluators.sparse_allreduce import SegmentTopK, Traffic, segment_topk_hook

#: PowerSGD's first compressed step: PyTorch needs vanilla AllReduce for the first step (DDP may regroup its
#: buckets after it), and no later start (its default is 1000) so short evaluations compress too.
POWERSGD_START = 2


@contextlib.contextmanager
def _counted(traffic: Traffic, world: int) -> Iterator[None]:
    """``torch.distributed.all_reduce`` counting the bytes each call sends per rank, while inside."""
    real = dist.all_reduce

    def all_reduce(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        traffic.bytes_sent += 2 * (world - 1) * tensor.numel() * tensor.element_size() // world
        return real(tensor, *args, **kwargs)

    dist.all_reduce = all_reduce
    try:
        yield
    finally:
        dist.all_reduce = real


class Metered:
    """A PyTorch hook with its state, waited for and counted: the state of :func:`metered_hook`."""

    def __init__(self, hook: Callable, state: Any, world: int, device: torch.device) -> None:
        self.hook, self.state, self.world, self.device = hook, state, world, device
        self.traffic = Traffic()

    def reduce(self, bucket: Any) -> torch.futures.Future:
        started = time.perf_counter()
        buffer = bucket.buffer()
        with _counted(self.traffic, self.world):
            future = self.hook(self.state, bucket)
            future.wait()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.traffic.dense(buffer.numel(), buffer.element_size(), self.world)
        self.traffic.values_sent += buffer.numel()
        self.traffic.calls += 1
        self.traffic.seconds += time.perf_counter() - started
        return future


def metered_hook(state: Metered, bucket):  # noqa: ANN001, ANN201 (DDP checks real annotations only)
    """The DDP communication hook of :class:`Metered`."""
    return state.reduce(bucket)


def register(model: nn.parallel.DistributedDataParallel, compression: Compression, world: int,
             device: torch.device) -> Traffic:
    """Put ``compression``'s hook on ``model`` (wrapped on a gang of ``world`` ranks); the traffic it will count."""
    if compression.kind == "segment_topk":
        state = SegmentTopK(float(compression.ratio))
        model.register_comm_hook(state, segment_topk_hook)
        return state.traffic
    if compression.kind == "powersgd":
        inner: tuple[Callable, Any] = (powerSGD_hook.powerSGD_hook, powerSGD_hook.PowerSGDState(
            process_group=None, matrix_approximation_rank=int(compression.rank), start_powerSGD_iter=POWERSGD_START))
    elif compression.kind == "fp16":
        inner = (default_hooks.fp16_compress_hook, None)
    else:
        inner = (default_hooks.allreduce_hook, None)
    meter = Metered(inner[0], inner[1], world, device)
    model.register_comm_hook(meter, metered_hook)
    return meter.traffic
