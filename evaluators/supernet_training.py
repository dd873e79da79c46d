"""Training a supernet, Single Path One-Shot style (Guo et al. 2019): one path sampled uniformly per step, on the
project's one training loop (:func:`evaluators.training.fit`, any world size), checkpointed after every epoch so
a stop, a lost worker or a crash resumes from the last one.

Determinism: the path of each step is a function of ``(seed, step)`` (``nas.oneshot.path_for_step``) and the
batch order of each epoch one of ``(seed, epoch)``, so a resumed training (weights, optimizer state, step count
from the checkpoint) continues exactly as the uninterrupted one would have, and every rank of a gang samples
the same path at every step (see :class:`evaluators.supernet.PathSampling`).

After each epoch, ``probes`` paths drawn from ``(seed, epoch)`` are scored as the path search will score them
(batch-norm statistics recomputed per path, then validation accuracy): the supernet's learning curve.
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
from evaluators.ranks import Ranks
from evaluators.reporting import Report, safe
from evaluators.supernet import PathSampling, SuperNet
from evaluators.training import Diverged, Stopped, TimedOut, fit, make_optimizer
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


def train_supernet(space: Any, dataset: str, training: dict[str, Any] | TrainingBudget | None,
                   folder: str | os.PathLike, *, device: str = "cpu", ranks: Ranks | None = None,
                   probes: int = PROBES, report: Report | None = None) -> SupernetResult:
    """Train the supernet of ``space`` (``cell``) on ``dataset`` for the budget's epochs, one uniformly sampled
    path per step, checkpointing into ``folder`` after every epoch and resuming from a checkpoint found there
    (one of the same space, data set and training fields; ``ValueError`` for another). Never raises for a
    failed training: the result says why.

    ``report(step, epoch, metrics) -> stop`` after every epoch with ``train_loss`` and the probes'
    ``val_accuracy`` (mean), ``val_accuracy_best`` and ``val_accuracy_worst``; ``True`` stops after that
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
            if ranks.leader:
                mark = time.perf_counter()
                scores = [r["accuracy"] for r in score_on_supernet(
                    supernet, probe_paths(space, budget.seed, epoch, probes), data, batches, budget.precision)]
                timings["probe"] += time.perf_counter() - mark
                point.update(val_accuracy=float(np.mean(scores)), val_accuracy_best=max(scores),
                             val_accuracy_worst=min(scores))
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
