"""Training a supernet, Single Path One-Shot style (Guo et al. 2019): one path sampled uniformly per step, on the
project's one training loop (:func:`evaluators.training.fit`, any world size), checkpointed after every epoch so
a stop, a lost worker or a crash resumes from the last one.

Determinism: the path of each step is a function of ``(seed, step)`` (``nas.oneshot.path_for_step``) and the
batch order of each epoch one of ``(seed, epoch)``, so a resumed training (weights, optimizer state, step count
from the checkpoint) continues exactly as the uninterrupted one would have, and every rank of a gang samples
the same path at every step (see :class:`evaluators.supernet.PathSampling`).

After each epoch, ``probes`` paths drawn from ``(seed, epoch)`` are scored as the path search will score them
(batch-norm statistics recomputed per path, then validation accuracy): the supernet's learning curve, with what
each device measured (``nas.oneshot.devices``).

On several devices (:func:`train_supernet_on`) the training runs as a data-parallel gang through the one gang
launcher (:func:`evaluators.data_parallel.run_gang`): the ranks draw the same path at every step from
``(seed, step)`` (no path is exchanged), DistributedDataParallel averages the gradients and looks for the
parameters no rank used, and only the leader writes the checkpoint and the weights into the folder they share.
"""
from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from evaluators.budget import TrainingBudget
from evaluators.builders import as_space
from evaluators.datasets import load_dataset
from evaluators.failure_text import describe
from evaluators.measure import resolve_device
from evaluators.path_scoring import calibration_batches, save_supernet, score_on_supernet
from evaluators.ranks import Gang, Ranks
from evaluators.reporting import Report, safe
from evaluators.result import EvaluationResult
from evaluators.supernet import PathSampling, SuperNet
from evaluators.training import Diverged, Stopped, TimedOut, fit, make_optimizer
from nas.oneshot.devices import device_key
from nas.oneshot.paths import probe_paths
from nas.spaces import canonical_json, space_to_config
from nas.strategies.archive import MAX_SEED

CHECKPOINT = "checkpoint.pt"
WEIGHTS = "supernet.pt"
#: Paths scored after each epoch for the learning curve.
PROBES = 4


@dataclasses.dataclass
class SupernetResult:
    """What a supernet training gave: ``status`` ``ok`` (every epoch done), ``stopped`` (the reporter asked;
    resume goes on from the checkpoint) or a failure (``diverged``, ``timeout``, ``oom``, ``invalid``,
    ``error``) with its ``reason``; the weights file and digest once ``ok``; the curve of every epoch done
    (including those before a resume), the timings of this run, the epoch it resumed after (0: fresh)."""

    status: str
    epochs: int
    steps: int
    curve: list[dict[str, Any]]
    timings: dict[str, float]
    device: str
    resumed_from: int = 0
    weights: str | None = None
    digest: str | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def epoch_seed(seed: int, epoch: int) -> int:
    """The batch-order seed of ``epoch`` (a function of ``(seed, epoch)``, like the paths)."""
    return int(np.random.SeedSequence([seed, epoch]).generate_state(1, dtype=np.uint64)[0] % (MAX_SEED + 1))


def _identity(space: Any, dataset: str, budget: TrainingBudget) -> str:
    """What a checkpoint must match to be resumed (the space, the data set, every training field but epochs:
    more epochs may be asked for on resume)."""
    return canonical_json({"space": space_to_config(space), "dataset": dataset,
                           "budget": {**budget.to_dict(), "epochs": None}})


def load_checkpoint(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The last checkpoint in ``folder``, or ``None``."""
    file = Path(folder) / CHECKPOINT
    return torch.load(file, map_location="cpu", weights_only=True) if file.exists() else None


def _save_checkpoint(folder: Path, state: dict[str, Any]) -> None:
    temporary = folder / f"{CHECKPOINT}.tmp"
    torch.save(state, temporary)
    os.replace(temporary, folder / CHECKPOINT)  # a crash mid-write leaves the previous checkpoint whole


def _probe(supernet: SuperNet, paths: list[Any], data: Any, batches: Any, precision: str, ranks: Ranks,
           train_seconds: float) -> dict[str, float]:
    """The epoch's probes, shared out among the ranks (path ``i`` on rank ``i % world``), and what each rank
    measured (``nas.oneshot.devices``): every rank gets the whole point."""
    mine = range(ranks.rank, len(paths), ranks.world)
    scored = torch.zeros(len(paths), 2, dtype=torch.float64, device=ranks.device)  # accuracy, loss
    for index, found in zip(mine, score_on_supernet(supernet, [paths[i] for i in mine], data, batches, precision)):
        scored[index] = torch.tensor([found["accuracy"], found["val_loss"]], dtype=torch.float64)
    seconds = torch.zeros(ranks.world, dtype=torch.float64, device=ranks.device)
    seconds[ranks.rank] = train_seconds
    scores, seconds = ranks.sum(scored).tolist(), ranks.sum(seconds).tolist()
    accuracies = [accuracy for accuracy, _ in scores]
    point = {"val_accuracy": float(np.mean(accuracies)), "val_accuracy_best": max(accuracies),
             "val_accuracy_worst": min(accuracies)}
    for rank, device in enumerate(ranks.devices if isinstance(ranks, Gang) else [str(ranks.device)]):
        own = scores[rank::ranks.world]
        point[device_key("probes", rank, device)] = float(len(own))
        point[device_key("train_seconds", rank, device)] = seconds[rank]
        if own:
            point[device_key("val_accuracy", rank, device)] = float(np.mean([a for a, _ in own]))
            point[device_key("val_loss", rank, device)] = float(np.mean([loss for _, loss in own]))
    return point


def train_supernet(space: Any, dataset: str, training: dict[str, Any] | TrainingBudget | None,
                   folder: str | os.PathLike, *, device: str = "cpu", ranks: Ranks | None = None,
                   probes: int = PROBES, report: Report | None = None) -> SupernetResult:
    """Train the supernet of ``space`` (``cell``) on ``dataset`` for the budget's epochs, one uniformly sampled
    path per step, checkpointing into ``folder`` after every epoch and resuming from a checkpoint found there
    (one of the same space, data set and training fields; ``ValueError`` for another). Never raises for a
    failed training: the result says why.

    ``report(step, epoch, metrics) -> stop`` after every epoch with ``train_loss`` and the probes'
    ``val_accuracy`` (mean), ``val_accuracy_best`` and ``val_accuracy_worst``, and what each rank measured
    (``nas.oneshot.devices``: the probes are shared out among the ranks); ``True`` stops after that
    epoch's checkpoint (status ``stopped``). ``ranks``: one rank of a gang (every rank calls this with the same
    arguments and folder; the leader writes the files and reports). The final weights go to
    ``folder/supernet.pt`` (``evaluators.path_scoring.save_supernet``).
    """
    started = time.perf_counter()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    timings = {"data": 0.0, "train": 0.0, "validate": 0.0, "probe": 0.0, "checkpoint": 0.0}
    budget = training if isinstance(training, TrainingBudget) else TrainingBudget.from_dict(training)
    space = as_space(space)
    resolved = resolve_device(device)
    ranks = ranks if ranks is not None else Ranks(resolved)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(budget.seed)
        supernet = SuperNet(space, dataset)  # raises ValueError for a space a supernet cannot hold
    supernet.to(resolved)
    optimizer = make_optimizer(supernet, budget)
    sampler = PathSampling(supernet, budget.seed)
    curve: list[dict[str, Any]] = []
    done = 0
    checkpoint = load_checkpoint(folder)
    if checkpoint is not None:
        if checkpoint["identity"] != _identity(space, dataset, budget):
            raise ValueError(f"the checkpoint in {folder} is of another supernet training (space, data set or "
                             f"training fields differ); use a fresh folder")
        supernet.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        done, sampler.step, curve = checkpoint["epoch"], checkpoint["step"], list(checkpoint["curve"])
    resumed_from = done
    tell = safe(report) if ranks.leader else safe(None)
    status, reason = "ok", None
    mark = time.perf_counter()
    data = load_dataset(dataset, str(resolved), budget.seed)
    batches = calibration_batches(data, seed=budget.seed)
    timings["data"] = time.perf_counter() - mark
    deadline = started + budget.max_seconds if budget.max_seconds is not None else None
    try:
        for epoch in range(done + 1, budget.epochs + 1):
            one = dataclasses.replace(budget, epochs=1, seed=epoch_seed(budget.seed, epoch))
            sampler.eval_path = probe_paths(space, budget.seed, epoch, 1)[0]  # what fit's own validation runs
            fitted: dict[str, Any] = {"metrics": {}, "curve": [], "timings": {"train": 0.0, "validate": 0.0}}
            fit(sampler, optimizer, data, one, ranks, fitted, deadline=deadline)
            timings["train"] += fitted["timings"]["train"]
            timings["validate"] += fitted["timings"]["validate"]
            point: dict[str, Any] = {"epoch": epoch, "step": sampler.step, "train_loss": fitted["metrics"]["train_loss"]}
            mark = time.perf_counter()
            point.update(_probe(supernet, probe_paths(space, budget.seed, epoch, probes), data, batches,
                                budget.precision, ranks, fitted["timings"]["train"]))
            timings["probe"] += time.perf_counter() - mark
            if ranks.leader:
                curve.append(point)
                mark = time.perf_counter()
                _save_checkpoint(folder, {"identity": _identity(space, dataset, budget), "epoch": epoch,
                                          "step": sampler.step, "curve": curve, "model": supernet.state_dict(),
                                          "optimizer": optimizer.state_dict()})
                timings["checkpoint"] += time.perf_counter() - mark
            done = epoch
            if ranks.any(tell(sampler.step, float(epoch), {k: v for k, v in point.items() if k not in ("epoch", "step")})):
                status = "stopped"
                break
    except Diverged as error:
        status, reason = "diverged", str(error)
    except TimedOut as error:
        status, reason = "timeout", str(error)
    except Stopped as error:
        status, reason = "stopped", str(error)
    except (torch.OutOfMemoryError, MemoryError) as error:
        status, reason = "oom", f"{type(error).__name__}: {error}"
    except Exception as error:  # a bug is a result too: the checkpoint of the last good epoch stays
        status, reason = "error", describe(error)
    result = SupernetResult(status=status, epochs=done, steps=sampler.step, curve=curve, timings=timings,
                            device=ranks.label, resumed_from=resumed_from, reason=reason)
    if status == "ok" and ranks.leader:
        file = folder / WEIGHTS
        result.weights, result.digest = str(file), save_supernet(supernet, file)
    timings["total"] = time.perf_counter() - started
    return result


def as_evaluation(result: SupernetResult) -> EvaluationResult:
    """A supernet training as the worker reports it: ``ok`` with the last epoch's mean probe accuracy as its
    fitness and the weights' ``digest`` among its metrics; ``stopped`` (resume goes on from the checkpoint) or
    another failure as a failed result keeping the curve."""
    fields = {"curve": result.curve, "timings": result.timings, "device": result.device}
    if result.status != "ok":
        return EvaluationResult.failed(result.status, result.reason or f"the supernet's training {result.status}",
                                       **fields)
    last = result.curve[-1] if result.curve else {}
    return EvaluationResult(status="ok", fitness=last.get("val_accuracy"), **fields, metrics={
        "digest": result.digest, "epochs": result.epochs, "steps": result.steps, "resumed_from": result.resumed_from,
        "accuracy": last.get("val_accuracy")})


def _trained(space: Any, dataset: str, training: Any, folder: str | os.PathLike, **options: Any) -> EvaluationResult:
    try:
        return as_evaluation(train_supernet(space, dataset, training, folder, **options))
    except ValueError as error:  # a space no supernet holds, another training's checkpoint: alike on every rank
        return EvaluationResult.failed("invalid", str(error), device=str(options.get("device", "")))


def train_supernet_on(devices: list[str], space: Any, dataset: str, training: dict[str, Any] | TrainingBudget | None,
                      folder: str | os.PathLike, *, probes: int = PROBES, report: Report | None = None,
                      **gang: Any) -> EvaluationResult:
    """:func:`train_supernet` on ``devices`` of this host: in this process on one, else as a data-parallel gang
    started and watched by :func:`evaluators.data_parallel.run_gang` (one rank per device, every rank on the
    same path at each step, gradients averaged, the leader writing the checkpoints and the weights into
    ``folder``, which the ranks share). Never raises: :func:`as_evaluation`'s result, whose ``device`` names
    every device. ``gang``: :func:`~evaluators.data_parallel.run_gang`'s options (``collective_timeout``, ...)."""
    if len(devices) == 1:
        return _trained(space, dataset, training, folder, device=devices[0], probes=probes, report=report)
    from evaluators.data_parallel import run_gang

    try:
        budget = training if isinstance(training, TrainingBudget) else TrainingBudget.from_dict(training)
        job = {"task": "supernet", "space": space_to_config(as_space(space)), "dataset": dataset,
               "training": budget.to_dict(), "folder": str(folder), "probes": probes}
    except (ValueError, TypeError, KeyError) as error:
        return EvaluationResult.failed("invalid", str(error), device=",".join(devices))
    return run_gang(job, devices, budget, report=report, **gang)


def supernet_on_ranks(job: dict[str, Any], ranks: Ranks, report: Report | None) -> EvaluationResult:
    """What each rank of a supernet gang runs (``evaluators.gang_rank``, a job of ``"task": "supernet"``)."""
    return _trained(job["space"], job["dataset"], job["training"], job["folder"], device=job["devices"][ranks.rank],
                    ranks=ranks, probes=job["probes"], report=report)
