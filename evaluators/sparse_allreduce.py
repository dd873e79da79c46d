"""Seed 003's segment-balanced sparsified AllReduce, as a DDP communication hook (:class:`SegmentTopK`).

Per gradient bucket of ``n`` values on a gang of ``k`` ranks:

1. the bucket plus this rank's residual (what earlier steps did not send: error feedback, as in Deep Gradient
   Compression) is split into ``k`` segments of ``ceil(n / k)`` values (the last one padded with zeros);
2. in every segment the same count ``m = ceil(ratio x segment)`` of largest-magnitude values is kept. Exact
   ``torch.topk`` per segment, not DGC's sampled threshold: at these sizes (segments of thousands to millions of
   values) it costs little beside the step, and an exact count is what makes every chunk the same size; a
   sampled threshold keeps *about* the same share, and the ring then waits for its largest chunk;
3. phase 1 (``k-1`` chunks of ``m`` (value, index) pairs each): segment ``j``'s pairs go to rank ``j``, its
   owner, in one ``all_to_all_single`` (gloo and NCCL both have it); the owner sums the ``k`` copies. The pairs
   travel as bytes: the value as it is, the index in 2 bytes when a segment holds at most 32,768 values (else 4);
4. phase 2 (``k-1`` chunks): every rank gathers the summed segments (``all_gather_into_tensor``), sparse (the
   positions any rank sent to the owner, padded to the gang's largest count, so the chunks stay equal) or dense,
   whichever sends fewer bytes; the mean over the ranks replaces the bucket.

What was not sent stays in the residual, per parameter (DDP may regroup the buckets after its first step), until
the evaluation ends: a new evaluation wraps a new model and starts with none. Every byte handed to a collective for
another rank is counted in :class:`Traffic` (values and indices); ``bytes_dense`` is what a ring AllReduce of the
same bucket sends, ``2 (k-1) / k x n x`` the value's size. The collectives run synchronously inside the hook (its
time is the step's communication time); the future it returns is already done.
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import torch
import torch.distributed as dist

#: Buckets whose chunk sizes :class:`Traffic` keeps one by one (tests read them); the balance covers every one.
CHUNK_LOG = 1000


def index_width(segment: int) -> int:
    """Bytes of one index within a segment of ``segment`` values: 2 (int16) up to 32,768 values, else 4."""
    return 2 if segment <= 2 ** 15 else 4


def pack(values: torch.Tensor, index: torch.Tensor, width: int) -> torch.Tensor:
    """``(rows, m)`` values and their indices as one ``(rows, m x (value bytes + width))`` byte tensor: one
    collective for both, and bytes are a type every backend moves as they are (NCCL has no int16)."""
    rows = values.shape[0]
    kind = torch.int16 if width == 2 else torch.int32
    return torch.cat([values.contiguous().view(torch.uint8).view(rows, -1),
                      index.to(kind).contiguous().view(torch.uint8).view(rows, -1)], dim=1)


def unpack(payload: torch.Tensor, m: int, dtype: torch.dtype, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`pack`'s values (``dtype``) and indices (int64), ``(rows, m)`` each."""
    split = m * torch.empty((), dtype=dtype).element_size()
    kind = torch.int16 if width == 2 else torch.int32
    values = payload[:, :split].contiguous().view(dtype)
    index = payload[:, split:].contiguous().view(kind).long()
    return values, index


@dataclasses.dataclass
class Traffic:
    """What one rank sent during one evaluation: bytes, values, time, and every chunk's size per phase."""

    bytes_sent: int = 0
    bytes_dense: int = 0
    values_sent: int = 0  #: gradient values this rank kept (its own segment's included, padding included)
    values_total: int = 0  #: gradient values of the buckets it reduced
    seconds: float = 0.0  #: time inside the hook (compression and collectives)
    calls: int = 0  #: buckets reduced
    #: per bucket reduced (the first :data:`CHUNK_LOG`): the chunk sizes in bytes of phase 1 (one per peer) and of
    #: phase 2 (one per owner)
    chunks: list[tuple[tuple[int, ...], tuple[int, ...]]] = dataclasses.field(default_factory=list)
    worst: float | None = None  #: the largest over the smallest chunk of a phase, over every bucket reduced

    def record(self, first: tuple[int, ...], second: tuple[int, ...]) -> None:
        """One bucket's chunks: the balance over all of them, the sizes of the first :data:`CHUNK_LOG`."""
        self.worst = max(self.worst or 0.0, balance([(first, second)]) or 0.0) or None
        if len(self.chunks) < CHUNK_LOG:
            self.chunks.append((first, second))

    def dense(self, numel: int, element: int, world: int) -> None:
        """Count what a ring AllReduce of ``numel`` values of ``element`` bytes sends per rank."""
        self.bytes_dense += 2 * (world - 1) * numel * element // world
        self.values_total += numel

    def summary(self) -> dict[str, Any]:
        """The numbers an evaluation reports for this rank."""
        return {"bytes_sent": self.bytes_sent, "bytes_dense": self.bytes_dense, "values_sent": self.values_sent,
                "values_total": self.values_total, "seconds": self.seconds, "calls": self.calls,
                "balance": self.worst}


def balance(chunks: list[tuple[tuple[int, ...], tuple[int, ...]]]) -> float | None:
    """The largest over the smallest chunk of any phase of any bucket reduced (1.0: the ring never waits for a
    larger chunk); ``None`` when nothing was recorded."""
    ratios = [max(phase) / min(phase) for call in chunks for phase in call if phase and min(phase) > 0]
    return max(ratios) if ratios else None


class SegmentTopK:
    """The hook's state on one rank: the share sent, the residuals and the traffic. Register with
    ``ddp.register_comm_hook(SegmentTopK(ratio), segment_topk_hook)``."""

    def __init__(self, ratio: float, group: Any = None) -> None:
        if not 0 < ratio <= 1:
            raise ValueError(f"ratio must be in (0, 1] (got {ratio!r})")
        self.ratio, self.group = ratio, group
        self.world = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        self.residuals: dict[int, torch.Tensor] = {}  # id(parameter) -> what it has not sent yet
        self.traffic = Traffic()

    def _residual(self, parameters: list[torch.Tensor], like: torch.Tensor) -> torch.Tensor:
        parts = [self.residuals.get(id(p)) for p in parameters]
        return torch.cat([torch.zeros(p.numel(), dtype=like.dtype, device=like.device) if r is None else r
                          for p, r in zip(parameters, parts)]) if parameters else torch.zeros_like(like)

    def _keep(self, parameters: list[torch.Tensor], left: torch.Tensor) -> None:
        offset = 0
        for p in parameters:
            self.residuals[id(p)] = left[offset:offset + p.numel()].clone()
            offset += p.numel()

    def reduce(self, flat: torch.Tensor, parameters: list[torch.Tensor]) -> torch.Tensor:
        """The gang's mean of ``flat`` (this rank's bucket), sparsified; updates the residuals and the traffic."""
        started = time.perf_counter()
        k, n = self.world, flat.numel()
        if sum(p.numel() for p in parameters) != n:
            parameters = []  # a layout this hook does not know: one residual for the bucket would be wrong
        accumulated = flat + self._residual(parameters, flat)
        segment = -(-n // k)
        rows = torch.zeros(k * segment, dtype=flat.dtype, device=flat.device)
        rows[:n] = accumulated
        rows = rows.view(k, segment)
        m = min(segment, max(1, math.ceil(self.ratio * segment)))
        index = rows.abs().topk(m, dim=1, sorted=False).indices
        values = rows.gather(1, index)
        left = rows.scatter(1, index, 0.0).flatten()[:n]  # sent + left == accumulated, exactly
        self._keep(parameters, left)

        # phase 1: segment j's pairs to rank j (equal chunks of m pairs), values and indices in one byte tensor
        width, element = index_width(segment), flat.element_size()
        got = torch.empty((k, m * (element + width)), dtype=torch.uint8, device=flat.device)
        dist.all_to_all_single(got, pack(values, index, width), group=self.group)
        got_values, got_index = unpack(got, m, flat.dtype, width)
        summed = torch.zeros(segment, dtype=flat.dtype, device=flat.device)
        summed.index_add_(0, got_index.flatten(), got_values.flatten())
        first = (m * (element + width),) * (k - 1)

        # phase 2: the summed segments to every rank, sparse or dense by bytes
        touched = torch.unique(got_index.flatten())
        count = torch.tensor([touched.numel()], dtype=torch.int64, device=flat.device)
        dist.all_reduce(count, op=dist.ReduceOp.MAX, group=self.group)  # the chunks' common size
        largest = int(count.item())
        extra = 2 * (k - 1) * count.element_size() // k
        if largest * (element + width) < segment * element:
            padded = torch.cat([touched, touched[:1].expand(largest - touched.numel())])  # repeats write the same
            pairs = pack(summed[padded].view(1, -1), padded.view(1, -1), width).flatten()
            gathered = torch.empty(k * pairs.numel(), dtype=torch.uint8, device=flat.device)  # flat: gloo wants it
            dist.all_gather_into_tensor(gathered, pairs, group=self.group)
            sums, positions = unpack(gathered.view(k, -1), largest, flat.dtype, width)
            whole = torch.zeros((k, segment), dtype=flat.dtype, device=flat.device)
            whole.scatter_(1, positions, sums)
            second = (largest * (element + width),) * (k - 1)
        else:
            whole = torch.empty(k * segment, dtype=flat.dtype, device=flat.device)
            dist.all_gather_into_tensor(whole, summed, group=self.group)
            second = (segment * element,) * (k - 1)
        flat.copy_(whole.flatten()[:n] / k)

        traffic = self.traffic
        traffic.bytes_sent += sum(first) + sum(second) + extra
        traffic.dense(n, element, k)
        traffic.values_sent += k * m
        traffic.calls += 1
        traffic.record(first, second)
        traffic.seconds += time.perf_counter() - started
        return flat


def segment_topk_hook(state: SegmentTopK, bucket):  # noqa: ANN001, ANN201 (DDP checks real annotations only)
    """The DDP communication hook: ``bucket`` (a ``GradBucket``) reduced by ``state``; a future already done."""
    future: torch.futures.Future = torch.futures.Future()
    future.set_result(state.reduce(bucket.buffer(), list(bucket.parameters())))
    return future
