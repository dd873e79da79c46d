"""One rank of a gang: ``python -m evaluators.gang_rank JOB.json RANK``, started by
:func:`evaluators.data_parallel.evaluate_on_gang` (as a subprocess: Celery's pool processes are daemonic and may
not start ``multiprocessing`` children, celery#1709).

Every rank builds the same model from the same seed, joins the gang's process group on localhost (gloo between
CPU ranks, NCCL between GPUs) and trains it with ``DistributedDataParallel``. The global batch and the learning
rate are the budget's, as on one device: each step draws the same global batch of ``batch_size`` images on every
rank (one shuffled order from the budget's seed) and rank ``r`` of ``g`` trains on its ``r``-th slice of
``batch_size // g`` images; DDP averages the gradients over the ranks, which is the gradient of the whole global
batch, so the optimizer step (and its learning rate) is the one-device step. BatchNorm normalises each slice by
its own statistics (as DDP does by default); rank 0's running statistics are the ones kept.

After each step the ranks all-reduce three numbers: the stop flag (rank 0 reads the gang's stop file), the
deadline flag and the loss; so every rank sees the same stop, the same timeout and the same divergence, at the same
step, and none waits on another that has left. Validation is split across the ranks and summed. Rank 0 writes the
result; a rank that fails any other way exits non-zero and the parent kills the gang.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from evaluators import measure, summary
from evaluators.lifetime import die_with_parent
from evaluators.budget import TrainingBudget
from evaluators.builders import architecture, as_space
from evaluators.datasets import load_dataset
from evaluators.result import EvaluationResult
from evaluators.training import (
    CHECK_EVERY,
    DIVERGENCE_FACTOR,
    Diverged,
    TimedOut,
    autocast,
    make_optimizer,
    prepare_input,
    validate,
)

#: Seconds between two touches of a rank's alive file (the parent's stall watchdog reads it).
ALIVE_EVERY = 1.0


class Stopped(RuntimeError):
    """The gang's stop flag was set (the search stopped, or the loop pruned the candidate)."""


class _Alive:
    def __init__(self, folder: Path, rank: int) -> None:
        self.path = folder / f"alive.{rank}"
        self.last = 0.0

    def touch(self) -> None:
        now = time.monotonic()
        if now - self.last >= ALIVE_EVERY:
            self.path.touch()
            self.last = now


def _train(job: dict[str, Any], rank: int, world: int, folder: Path, alive: _Alive) -> dict[str, Any]:
    started = time.perf_counter()
    budget = TrainingBudget.from_dict(job["training"])
    spec = architecture(job["genome"], as_space(job["space"]), job["dataset"])
    device = measure.resolve_device(job["devices"][rank])
    if device.type == "cuda":
        torch.cuda.set_device(device)
    deadline = started + budget.max_seconds if budget.max_seconds is not None else None
    data = load_dataset(job["dataset"], str(device), budget.seed)
    report: dict[str, Any] = {"metrics": {}, "curve": [], "normalization": data.normalization,
                              "timings": {"data": time.perf_counter() - started, "train": 0.0, "validate": 0.0}}
    mark = time.perf_counter()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(budget.seed)
        from evaluators.blocks import Net

        model = Net(spec).to(device)
    if budget.precision == "bf16":
        model.to(memory_format=torch.channels_last)
    gang = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = make_optimizer(gang, budget)  # the one-device learning rate: the global batch is the same
    count = len(data.train_x)
    global_batch = min(budget.batch_size, count)
    local = global_batch // world
    if local < 1:
        raise ValueError(f"batch_size {global_batch} is smaller than the gang's {world} ranks")
    steps = count // global_batch
    report["metrics"].update(params=sum(p.numel() for p in model.parameters()), flops=summary.summarize(spec)["macs"],
                             precision=budget.precision, batch_size=local * world)
    report["timings"]["build"] = time.perf_counter() - mark
    stop_file = folder / "stop"
    generator = torch.Generator().manual_seed(budget.seed)
    classes = 2
    for epoch in range(1, budget.epochs + 1):
        mark = time.perf_counter()
        gang.train()
        order = torch.randperm(count, generator=generator).to(device)  # the same on every rank
        total = 0.0
        for step in range(steps):
            begin = step * global_batch + rank * local
            index = order[begin:begin + local]
            inputs = prepare_input(data.train_x.index_select(0, index), budget.precision)
            with autocast(device, budget.precision):
                logits = gang(inputs)
            classes = int(logits.shape[1])
            loss = F.cross_entropy(logits.float(), data.train_y.index_select(0, index))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            stop = 1.0 if rank == 0 and stop_file.exists() else 0.0
            late = 1.0 if deadline is not None and time.perf_counter() > deadline else 0.0
            flags = torch.tensor([stop, late, float(loss.detach())], dtype=torch.float64, device=device)
            dist.all_reduce(flags)
            alive.touch()
            if epoch == 1 and step == 0:
                (folder / f"training.{rank}").touch()
            total += float(flags[2]) / world
            if flags[0] > 0:
                raise Stopped(f"stopped by the gang's stop flag (epoch {epoch}, step {step + 1} of {steps})")
            if flags[1] > 0:
                raise TimedOut(f"the wall-time cap passed during training (step {step + 1} of {steps})")
            if ((step + 1) % CHECK_EVERY == 0 or step == 0) and not math.isfinite(total):
                raise Diverged(f"the training loss became non-finite ({total}) within the first {step + 1} steps")
        mean = total / steps
        if not math.isfinite(mean):
            raise Diverged(f"the training loss became non-finite ({mean})")
        if mean > DIVERGENCE_FACTOR * math.log(max(classes, 2)):
            raise Diverged(f"the mean training loss exploded to {mean:.4g}")
        measure.synchronize(device)
        report["timings"]["train"] += time.perf_counter() - mark
        mark = time.perf_counter()
        shard_x, shard_y = data.val_x[rank::world], data.val_y[rank::world]
        sums = torch.zeros(2, dtype=torch.float64, device=device)
        if len(shard_x):
            val_loss, accuracy = validate(model, shard_x, shard_y, budget)
            sums += torch.tensor([val_loss * len(shard_x), accuracy * len(shard_x)], dtype=torch.float64, device=device)
        dist.all_reduce(sums)
        val_loss, accuracy = float(sums[0]) / len(data.val_x), float(sums[1]) / len(data.val_x)
        report["timings"]["validate"] += time.perf_counter() - mark
        report["curve"].append({"epoch": epoch, "train_loss": mean, "val_loss": val_loss, "val_accuracy": accuracy})
        report["metrics"].update(accuracy=accuracy, train_loss=mean, val_loss=val_loss, epochs=epoch)
        alive.touch()
    images = budget.epochs * steps * local * world
    report["metrics"]["images_per_second"] = images / max(report["timings"]["train"], 1e-9)
    if rank == 0:
        report["metrics"]["latency_ms"] = measure.latency_ms(model, data.shape, device, budget.precision)
    report["timings"]["total"] = time.perf_counter() - started
    return report


def _write(folder: Path, result: EvaluationResult) -> None:
    partial = folder / "result.json.part"
    partial.write_text(json.dumps(result.to_dict()))
    partial.replace(folder / "result.json")


def main(argv: list[str]) -> int:
    job_path, rank = Path(argv[0]), int(argv[1])
    folder = job_path.parent
    job = json.loads(job_path.read_text())
    die_with_parent(signal.SIGKILL, int(job["parent"]))  # no rank outlives its worker
    world = len(job["devices"])
    torch.set_num_threads(max(1, int(job.get("threads", 1))))
    alive = _Alive(folder, rank)
    alive.touch()
    device = job["devices"][rank]
    backend = "gloo" if device == "cpu" else "nccl"
    # the rendezvous is a file of the gang's folder: no port to pick, none to collide with another gang's
    store = dist.FileStore(str(folder / "rendezvous"), world)
    dist.init_process_group(backend, store=store, rank=rank, world_size=world,
                            timeout=dt.timedelta(seconds=float(job["collective_timeout"])))
    devices = ",".join(job["devices"])
    try:
        report = _train(job, rank, world, folder, alive)
        if rank == 0:
            _write(folder, EvaluationResult(
                status="ok", fitness=report["metrics"]["accuracy"], metrics=report["metrics"], curve=report["curve"],
                timings=report["timings"], device=devices, normalization=report["normalization"]))
    except (Stopped, TimedOut, Diverged) as error:  # seen by every rank at the same step: a result, not a death
        if rank == 0:
            reason = {Stopped: "stopped", TimedOut: "timeout", Diverged: "diverged"}[type(error)]
            _write(folder, EvaluationResult.failed(reason, str(error), device=devices))
    # Every rank gets here at the same point (an error of one rank alone skips this: it exits non-zero and the
    # parent stops the gang). Leave together: a rank tearing gloo down while another still uses it can abort it.
    try:
        dist.barrier()
        dist.destroy_process_group()
    except Exception:
        pass
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip the interpreter's teardown of gloo's threads (a source of SIGABRT at exit)
