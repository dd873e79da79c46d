"""Training and validation on tensors already on the device: cross-entropy, Adam by default, fp32 or bf16
autocast with channels_last. Deterministic on the CPU for a fixed seed (the batch order comes from a seeded
``torch.Generator``, never from global state).

A non-finite or exploding loss raises :class:`Diverged`, a passed deadline :class:`TimedOut`; the caller turns
both into failed results.
"""
from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from evaluators.budget import TrainingBudget

__all__ = ["Diverged", "TimedOut", "TrainingBudget", "autocast", "make_optimizer", "train_one_epoch", "validate"]

#: The loss is checked for NaN/inf every this many steps (each check waits for the GPU).
CHECK_EVERY = 16
#: A mean epoch loss above this many times chance level (ln of the class count) counts as divergence.
DIVERGENCE_FACTOR = 50.0
#: Test hooks of :func:`train_one_epoch` (``fault=``): make the real failure paths run on demand.
FAULTS = ("oom", "nan")


class Diverged(RuntimeError):
    """The training loss became non-finite or exploded."""


class TimedOut(RuntimeError):
    """The evaluation's wall-time cap passed."""


def make_optimizer(model: nn.Module, budget: TrainingBudget) -> torch.optim.Optimizer:
    """The budget's optimizer over the model's parameters."""
    params = model.parameters()
    if budget.optimizer == "adam":
        return torch.optim.Adam(params, lr=budget.learning_rate, weight_decay=budget.weight_decay)
    if budget.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=budget.learning_rate, weight_decay=budget.weight_decay)
    return torch.optim.SGD(params, lr=budget.learning_rate, weight_decay=budget.weight_decay, momentum=0.9,
                           nesterov=True)


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """bf16 autocast for ``precision == "bf16"``, else nothing."""
    if precision == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def prepare_input(x: torch.Tensor, precision: str) -> torch.Tensor:
    """channels_last in bf16 (what the tensor cores want), unchanged in fp32."""
    return x.contiguous(memory_format=torch.channels_last) if precision == "bf16" else x


def _check_finite(total: torch.Tensor, steps: int) -> None:
    value = float(total)
    if not math.isfinite(value):
        raise Diverged(f"the training loss became non-finite ({value}) within the first {steps} steps of the epoch")


def train_one_epoch(model: nn.Module, x: torch.Tensor, y: torch.Tensor, optimizer: torch.optim.Optimizer,
                    budget: TrainingBudget, generator: torch.Generator, deadline: float | None = None,
                    fault: str | None = None, after_step: Callable[[int], bool] | None = None) -> float:
    """One pass over ``(x, y)`` in a shuffled order drawn from ``generator``, full batches only; the mean loss.

    ``after_step(steps done in this epoch)`` is called after each step; ``True`` ends the epoch there (an early
    stop), and the mean is over the steps done.

    ``deadline`` is a ``time.perf_counter()`` value; ``fault`` is a test hook (``"oom"`` raises a real
    ``torch.OutOfMemoryError`` inside the step, ``"nan"`` poisons the loss) that exercises the real recovery
    paths of the caller.
    """
    model.train()
    count = len(x)
    batch = min(budget.batch_size, count)
    steps = count // batch
    order = torch.randperm(count, generator=generator).to(x.device)
    total = torch.zeros((), device=x.device)
    for step in range(steps):
        index = order[step * batch:(step + 1) * batch]
        inputs = prepare_input(x.index_select(0, index), budget.precision)
        with autocast(x.device, budget.precision):
            logits = model(inputs)
        loss = F.cross_entropy(logits.float(), y.index_select(0, index))
        if fault == "oom":
            raise torch.OutOfMemoryError("test hook: out of memory raised inside the training step")
        if fault == "nan":
            loss = loss * float("nan")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += loss.detach()
        if (step + 1) % CHECK_EVERY == 0 or step == 0:
            _check_finite(total, step + 1)
        if deadline is not None and time.perf_counter() > deadline:
            raise TimedOut(f"the wall-time cap passed during training (step {step + 1} of {steps})")
        if after_step is not None and after_step(step + 1):
            steps = step + 1
            break
    mean = float(total) / steps
    _check_finite(torch.tensor(mean), steps)
    if mean > DIVERGENCE_FACTOR * math.log(max(int(logits.shape[1]), 2)):
        raise Diverged(f"the mean training loss exploded to {mean:.4g}")
    return mean


@torch.no_grad()
def validate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, budget: TrainingBudget,
             deadline: float | None = None) -> tuple[float, float]:
    """(mean loss, accuracy) over every image of ``(x, y)``, in batches of the budget's size."""
    model.eval()
    batch = max(budget.batch_size, 256)
    loss = torch.zeros((), device=x.device, dtype=torch.float64)
    correct = torch.zeros((), device=x.device, dtype=torch.int64)
    for start in range(0, len(x), batch):
        inputs = prepare_input(x[start:start + batch], budget.precision)
        with autocast(x.device, budget.precision):
            logits = model(inputs).float()
        targets = y[start:start + batch]
        loss += F.cross_entropy(logits, targets, reduction="sum").double()
        correct += (logits.argmax(1) == targets).sum()
        if deadline is not None and time.perf_counter() > deadline:
            raise TimedOut("the wall-time cap passed during validation")
    return float(loss) / len(x), int(correct) / len(x)
