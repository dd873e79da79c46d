"""Where one training runs: one device, or a data-parallel gang of ranks. The training loop
(:func:`evaluators.training.fit`) is written once and asks these objects for every step that depends on the
world size, so that at world size 1 each such step is a no-op and the loop is the plain one-device loop.

- :class:`Ranks` is world size 1: the model is used as it is, nothing is exchanged, no step waits for another
  process.
- :class:`Gang` is one rank of a process group that is already initialised (``torch.distributed``, gloo between
  CPU ranks, NCCL between GPUs): the model is wrapped in ``DistributedDataParallel`` (which averages the
  gradients), every step agrees on the stop and deadline flags and the loss, validation is split across the
  ranks and summed. How a gang is started and watched is :mod:`evaluators.data_parallel`'s business. Its
  gradients go through the configured compression's communication hook (:mod:`evaluators.comm_hooks`), which
  counts what each rank sends (:meth:`Gang.traffic`).

Same global batch, same learning rate: each step every rank draws the same global batch of ``batch_size`` images
(one shuffled order from the budget's seed) and trains on its ``1/world`` slice; the averaged gradient is the
whole batch's, so the optimizer step is the one-device step.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from evaluators.compression import Compression


class Ranks:
    """World size 1: the plain case, in this process on ``device``."""

    rank = 0
    world = 1

    def __init__(self, device: torch.device) -> None:
        self.device = device

    @property
    def leader(self) -> bool:
        """The rank that reports progress and runs what follows training (latency, weights, exports)."""
        return self.rank == 0

    @property
    def label(self) -> str:
        """What the result's ``device`` says: the device, or every device of a gang."""
        return str(self.device)

    def wrap(self, model: nn.Module) -> nn.Module:
        """The module the training steps call (its gradients averaged over the ranks)."""
        return model

    def agree(self, stop: bool, late: bool, loss: torch.Tensor) -> tuple[bool, bool, torch.Tensor]:
        """After a step: whether any rank must stop or passed its deadline, and the step's loss over the ranks
        (a tensor on the device: at world size 1 nothing waits for the device here)."""
        return stop, late, loss

    def any(self, flag: bool) -> bool:
        """Whether ``flag`` is set on any rank (the leader's stop answer, for every rank)."""
        return flag

    def sum(self, values: torch.Tensor) -> torch.Tensor:
        """``values`` summed over the ranks."""
        return values

    def shard(self, values: torch.Tensor) -> torch.Tensor:
        """This rank's share of a validation set (every ``world``-th item from ``rank``)."""
        return values

    def align(self, model: nn.Module) -> None:
        """Give every rank the leader's buffers (BatchNorm's running statistics, which each rank updates from its
        own slice), so that each validates the very model the leader keeps."""

    def stop_requested(self) -> bool:
        """Whether someone outside asks this training to stop now (a gang's stop flag)."""
        return False

    def stepped(self) -> None:
        """Called after every training step (a gang's ranks show they are alive)."""

    def traffic(self) -> dict[str, Any]:
        """What the ranks sent to each other during the training, summed over the ranks (nothing on one
        device): ``bytes_sent``, ``bytes_dense``, ``kept`` (share of gradient values sent), ``balance``,
        ``compression``, ``ranks`` and ``communicate`` (seconds in the exchange, the slowest rank's)."""
        return {}


class Gang(Ranks):
    """Rank ``rank`` of ``devices`` (one rank each), in a process group already initialised."""

    def __init__(self, device: torch.device, rank: int, devices: list[str],
                 compression: Compression | None = None) -> None:
        super().__init__(device)
        self.rank, self.world, self.devices = rank, len(devices), devices
        self.compression = compression or Compression()
        self.sent = None  # the wrapped model's traffic (evaluators.sparse_allreduce.Traffic)
        if device.type == "cuda":
            torch.cuda.set_device(device)

    @property
    def label(self) -> str:
        return ",".join(self.devices)

    def wrap(self, model: nn.Module) -> nn.Module:
        from evaluators.comm_hooks import register

        # A supernet's training leaves most parameters unused at each step (the same ones on every rank), and so
        # does a cell whose op feeds a node that never reaches the output: DistributedDataParallel must look for
        # them, or it fails on their missing gradients.
        unused = any(getattr(module, "unused_parameters", False) for module in model.modules())
        wrapped = nn.parallel.DistributedDataParallel(model, device_ids=[self.device.index]
                                                      if self.device.type == "cuda" else None,
                                                      find_unused_parameters=unused)
        if self.world > 1:  # a gang of one exchanges nothing: its gradients stay exactly as computed
            self.sent = register(wrapped, self.compression, self.world, self.device)  # fresh residuals each time
        return wrapped

    def traffic(self) -> dict[str, Any]:
        if self.sent is None:
            return {}
        mine = self.sent.summary()
        sums = torch.tensor([mine["bytes_sent"], mine["bytes_dense"], mine["values_sent"], mine["values_total"]],
                            dtype=torch.float64, device=self.device)
        dist.all_reduce(sums)
        most = torch.tensor([mine["seconds"], mine["balance"] or 0.0], dtype=torch.float64, device=self.device)
        dist.all_reduce(most, op=dist.ReduceOp.MAX)
        return {"bytes_sent": int(sums[0]), "bytes_dense": int(sums[1]),
                "kept": float(sums[2] / sums[3]) if sums[3] > 0 else None,
                "balance": float(most[1]) if mine["balance"] is not None else None,
                "communicate": float(most[0]), "compression": self.compression.kind, "ranks": self.world}

    def agree(self, stop: bool, late: bool, loss: torch.Tensor) -> tuple[bool, bool, torch.Tensor]:
        flags = torch.stack([torch.tensor(float(stop), dtype=torch.float64, device=self.device),
                             torch.tensor(float(late), dtype=torch.float64, device=self.device),
                             loss.detach().to(torch.float64)])
        dist.all_reduce(flags)
        return bool(flags[0] > 0), bool(flags[1] > 0), flags[2] / self.world

    def any(self, flag: bool) -> bool:
        value = torch.tensor([float(flag)], dtype=torch.float64, device=self.device)
        dist.all_reduce(value)
        return bool(value[0] > 0)

    def sum(self, values: torch.Tensor) -> torch.Tensor:
        dist.all_reduce(values)
        return values

    def shard(self, values: torch.Tensor) -> torch.Tensor:
        return values[self.rank::self.world]

    def align(self, model: nn.Module) -> None:
        for buffer in model.buffers():
            dist.broadcast(buffer, 0)
