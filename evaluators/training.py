"""How a candidate is trained, for any number of devices: :func:`fit` (epochs, validation, the learning curve,
progress reports that may stop it), :func:`train_one_epoch` and :func:`validate`, on tensors already on the
device or on a registered set decoded per batch (``evaluators.image_stream.StreamedImages``, :func:`batches`):
cross-entropy, Adam by default, fp32 or bf16 autocast with channels_last. Deterministic on the CPU for a
fixed seed (the batch order comes from a seeded ``torch.Generator``, never from global state).

The world size is a parameter (:mod:`evaluators.ranks`), never a second loop: on one device every collective
step is a no-op; on a gang each rank runs this same loop on its slice of the same global batch.

A non-finite or exploding loss raises :class:`Diverged`, a passed deadline :class:`TimedOut`, a gang's stop flag
:class:`Stopped`; the caller turns each into a failed result.
"""
from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from evaluators.budget import TrainingBudget
from evaluators.datasets import DatasetSplit
from evaluators.ranks import Ranks
from evaluators.reporting import Report, report_points, safe

__all__ = ["Declined", "Diverged", "Stopped", "TimedOut", "TrainingBudget", "autocast", "batches", "fit",
           "make_optimizer", "step_rate", "train_one_epoch", "validate"]

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


class Stopped(RuntimeError):
    """Stopped from outside by a gang's stop flag (its search stopped)."""


class Declined(RuntimeError):
    """The decision taken at the scaling probe inside the training (``fit(on_probe=...)``) moves the candidate to
    another configuration: this one ends there, its caller starts the evaluation where the decision says."""


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


def finite(value: float | None) -> float | None:
    """``value`` as a plain float, ``None`` when it is NaN or infinite (JSON has neither)."""
    return float(value) if value is not None and math.isfinite(value) else None


def batches(x: Any, picks: list[slice | torch.Tensor]) -> Iterator[torch.Tensor]:
    """The rows of ``x`` at each pick (a slice or an index tensor), in order: from a tensor on the device, or
    decoded from disk per batch for a set too large to keep (``StreamedImages.batches``)."""
    if isinstance(x, torch.Tensor):
        return (x[pick] if isinstance(pick, slice) else x.index_select(0, pick) for pick in picks)
    return x.batches(picks)


def train_one_epoch(model: nn.Module, x: Any, y: torch.Tensor, optimizer: torch.optim.Optimizer,
                    budget: TrainingBudget, generator: torch.Generator, deadline: float | None = None,
                    fault: str | None = None, after_step: Callable[[int], bool] | None = None,
                    ranks: Ranks | None = None, augment: bool = False) -> float:
    """One pass over ``(x, y)`` in a shuffled order drawn from ``generator``, full batches only; the mean loss
    (over the ranks of a gang: ``model`` is then its ``DistributedDataParallel`` wrapper, and each rank trains on
    its slice of every global batch).

    ``after_step(steps done in this epoch)`` is called after each step; ``True`` ends the epoch there (an early
    stop), and the mean is over the steps done.

    ``deadline`` is a ``time.perf_counter()`` value; ``fault`` is a test hook (``"oom"`` raises a real
    ``torch.OutOfMemoryError`` inside the step, ``"nan"`` poisons the loss) that exercises the real recovery
    paths of the caller. ``augment``: random crops and flips of every batch (``evaluators.augment``).
    """
    ranks = ranks if ranks is not None else Ranks(x.device)
    model.train()
    count = len(x)
    batch = min(budget.batch_size, count)
    local = batch // ranks.world
    if local < 1:
        raise ValueError(f"batch_size {batch} is smaller than the gang's {ranks.world} ranks")
    steps = count // batch
    order = torch.randperm(count, generator=generator).to(x.device)  # the same on every rank
    total = torch.zeros((), device=x.device)
    picks = [order[step * batch + ranks.rank * local:step * batch + (ranks.rank + 1) * local] for step in range(steps)]
    for step, (index, inputs) in enumerate(zip(picks, batches(x, picks))):
        if augment:
            from evaluators.augment import augment_batch

            inputs = augment_batch(inputs, generator)
        inputs = prepare_input(inputs, budget.precision)
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
        late = deadline is not None and time.perf_counter() > deadline
        stop, late, mean_loss = ranks.agree(ranks.stop_requested(), late, loss.detach())
        total += mean_loss
        ranks.stepped()
        if stop:
            raise Stopped(f"stopped by the gang's stop flag (step {step + 1} of {steps})")
        if (step + 1) % CHECK_EVERY == 0 or step == 0:
            _check_finite(total, step + 1)
        if late:
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
def validate(model: nn.Module, x: Any, y: torch.Tensor, budget: TrainingBudget,
             deadline: float | None = None, ranks: Ranks | None = None) -> tuple[float, float]:
    """(mean loss, accuracy) over every image of ``(x, y)``, in batches of the budget's size; on a gang each rank
    validates its share and the sums are added (the deadline is then the training steps' to enforce)."""
    ranks = ranks if ranks is not None else Ranks(x.device)
    if ranks.world > 1:
        deadline = None  # one rank alone must not leave: the others would wait for it
    ranks.align(model)
    model.eval()
    shard_x, shard_y = ranks.shard(x), ranks.shard(y)
    batch = max(budget.batch_size, 256)
    loss = torch.zeros((), device=x.device, dtype=torch.float64)
    correct = torch.zeros((), device=x.device, dtype=torch.int64)
    picks = [slice(start, start + batch) for start in range(0, len(shard_x), batch)]
    for start, inputs in zip(range(0, len(shard_x), batch), batches(shard_x, picks)):
        inputs = prepare_input(inputs, budget.precision)
        with autocast(x.device, budget.precision):
            logits = model(inputs).float()
        targets = shard_y[start:start + batch]
        loss += F.cross_entropy(logits, targets, reduction="sum").double()
        correct += (logits.argmax(1) == targets).sum()
        if deadline is not None and time.perf_counter() > deadline:
            raise TimedOut("the wall-time cap passed during validation")
    sums = ranks.sum(torch.stack([loss, correct.double()]))
    return float(sums[0]) / len(x), float(sums[1]) / len(x)


def fit(model: nn.Module, optimizer: torch.optim.Optimizer, data: DatasetSplit, budget: TrainingBudget,
        ranks: Ranks, report: dict[str, Any], *, deadline: float | None = None, fault: str | None = None,
        on_point: Report | None = None, report_every: int | None = None,
        on_probe: Callable[[float | None, float], bool] | None = None, probe_steps: int = 5) -> None:
    """Train ``model`` (built and on its device) for the budget's epochs on ``ranks``, validating after each
    epoch, and fill ``report`` as it goes (``curve``, ``metrics``, ``timings`` ``train`` and ``validate``), so a
    failure keeps what was done.

    ``on_point(step, epoch, metrics) -> stop`` is called every ``report_every`` training steps (each epoch's end
    when ``None``) with the validation metrics there; ``True`` stops the training at that point and sets
    ``report["stopped"]`` (a pruned result). A gang adds what its ranks sent (``bytes_sent``, ``bytes_dense``,
    ``kept``, ``balance``, ``compression``) to the metrics, and the train time split into ``communicate`` and
    ``compute`` to the timings. On a gang, every rank validates at the same points and the
    leader's answer stops them all at the same step; ``on_point`` must then be given on every rank (only the
    leader's is asked).

    ``on_probe(rate, steps) -> go_on``: the scaling probe inside the training (``webapp.worker.device_claims``):
    the first epoch's steps after one warm-up step are timed, ``probe_steps`` of them, and the leader is told their
    rate (global steps per second; ``None`` where the epoch is too short to time) and the steps of the whole
    training; ``False`` raises :class:`Declined` on every rank (the decision moves the candidate), ``True`` goes on
    training from there: the probe's steps are the training's first, nothing is started again.
    """
    wrapped = ranks.wrap(model)
    count = len(data.train_x)
    batch = min(budget.batch_size, count)
    steps = count // batch
    tell = safe(on_point) if ranks.leader else safe(None)
    points = set(report_points(steps, budget.epochs, report_every)) if on_point is not None else set()
    known = {"params": report["metrics"].get("params"), "flops": report["metrics"].get("flops")}  # multi-objective
    generator = torch.Generator().manual_seed(budget.seed)
    trained, epoch = 0, 0

    def point(step: int, metrics: dict[str, Any]) -> bool:
        """Report at ``step`` (global); every rank learns the leader's answer."""
        report["stopped"] = ranks.any(tell(step, step / steps, {**metrics, **known}))
        return report["stopped"]

    def reported(done: int) -> bool:
        """After each step: at a report point that is not an epoch's end, validate, report, maybe stop."""
        nonlocal trained
        trained = (epoch - 1) * steps + done
        if trained not in points or done == steps:
            return False
        val_loss, accuracy = validate(model, data.val_x, data.val_y, budget, deadline, ranks)
        wrapped.train()
        report["curve"].append({"epoch": trained / steps, "step": trained, "val_loss": finite(val_loss),
                                "val_accuracy": accuracy})
        report["metrics"].update(accuracy=accuracy, val_loss=finite(val_loss), epochs=trained / steps)
        return point(trained, {"val_accuracy": accuracy, "val_loss": val_loss})

    timed = _ProbeTimer(on_probe if ranks.leader else (lambda rate, total: True), ranks, steps, probe_steps,
                        budget.epochs * steps) if on_probe is not None else None

    def after_step(done: int) -> bool:
        if timed is not None and epoch == 1:
            timed(done)
        return reported(done) if points else False

    for epoch in range(1, budget.epochs + 1):
        mark = time.perf_counter()
        train_loss = train_one_epoch(wrapped, data.train_x, data.train_y, optimizer, budget, generator, deadline,
                                     fault, after_step=after_step if points or timed else None, ranks=ranks,
                                     augment=data.augment)
        synchronize(ranks.device)
        report["timings"]["train"] += time.perf_counter() - mark
        if report.get("stopped"):  # stopped mid-epoch: its last report is the curve's last point
            report["curve"][-1]["train_loss"] = finite(train_loss)
            break
        mark = time.perf_counter()
        val_loss, accuracy = validate(model, data.val_x, data.val_y, budget, deadline, ranks)
        report["timings"]["validate"] += time.perf_counter() - mark
        report["curve"].append({"epoch": epoch, "step": epoch * steps, "train_loss": finite(train_loss),
                                "val_loss": finite(val_loss), "val_accuracy": accuracy})
        report["metrics"].update(accuracy=accuracy, train_loss=finite(train_loss), val_loss=finite(val_loss),
                                 epochs=epoch)
        if epoch < budget.epochs and epoch * steps in points and point(epoch * steps, {
                "val_accuracy": accuracy, "val_loss": val_loss, "train_loss": train_loss}):
            trained = epoch * steps
            break
    trained = trained if report.get("stopped") else budget.epochs * steps
    report["metrics"]["steps"] = trained
    images = trained * (batch // ranks.world) * ranks.world
    report["metrics"]["images_per_second"] = images / max(report["timings"]["train"], 1e-9)
    traffic = ranks.traffic()  # every rank gets here at the same point: a gang sums its ranks' counts
    if traffic:
        report["timings"]["communicate"] = communicate = traffic.pop("communicate")
        report["timings"]["compute"] = max(report["timings"]["train"] - communicate, 0.0)
        report["metrics"].update(traffic)


class _ProbeTimer:
    """The scaling probe inside :func:`fit`: after each of the first epoch's steps, times ``probe`` of them after
    one warm-up step and asks ``on_probe`` (every rank learns the leader's answer)."""

    WARMUP = 1

    def __init__(self, on_probe: Callable[[float | None, float], bool], ranks: Ranks, per_epoch: int, probe: int,
                 total: float) -> None:
        self.on_probe, self.ranks, self.total = on_probe, ranks, float(total)
        self.last = min(self.WARMUP + max(int(probe), 1), per_epoch)
        self.marks: dict[int, float] = {}

    def __call__(self, done: int) -> None:
        if self.last <= self.WARMUP:  # an epoch too short to time: decide without a rate, after the first step
            if done == 1:
                self._ask(None)
            return
        if done in (self.WARMUP, self.last):
            synchronize(self.ranks.device)
            self.marks[done] = time.perf_counter()
        if done == self.last:
            self._ask((self.last - self.WARMUP) / max(self.marks[self.last] - self.marks[self.WARMUP], 1e-9))

    def _ask(self, rate: float | None) -> None:
        if self.ranks.any(not self.on_probe(rate, self.total)):
            raise Declined(f"the decision taken at the probe ({rate or 0:.3g} steps/s) moves the candidate")


def step_rate(model: nn.Module, optimizer: torch.optim.Optimizer, data: DatasetSplit, budget: TrainingBudget,
              ranks: Ranks, steps: int, *, warmup: int = 1, deadline: float | None = None) -> dict[str, float]:
    """A scaling probe: ``steps`` optimizer steps of this training loop (:func:`train_one_epoch`, on ``ranks``: one
    device or a gang) timed after ``warmup`` untimed ones (allocations, kernel choice, the first collective).
    Returns ``rate`` (global steps per second) and ``steps`` (what the whole evaluation would train: epochs x steps
    per epoch); the model's weights move, so the probe's model is thrown away after it."""
    wrapped = ranks.wrap(model)
    count = len(data.train_x)
    per_epoch = count // min(budget.batch_size, count)
    marks: dict[int, float] = {}
    last = min(warmup + steps, per_epoch)
    if last <= warmup:
        raise ValueError(f"an epoch of {per_epoch} steps leaves none to time after {warmup} warm-up steps")

    def timed(done: int) -> bool:
        if done in (warmup, last):
            synchronize(ranks.device)
            marks[done] = time.perf_counter()
        return done >= last

    train_one_epoch(wrapped, data.train_x, data.train_y, optimizer, budget, torch.Generator().manual_seed(budget.seed),
                    deadline, after_step=timed, ranks=ranks, augment=data.augment)
    return {"rate": (last - warmup) / max(marks[last] - marks[warmup], 1e-9), "steps": float(budget.epochs * per_epoch)}


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (timings that end here are true); nothing on the CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
