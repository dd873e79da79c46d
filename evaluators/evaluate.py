"""The one entry point: ``evaluate(genome, space, training, dataset, device) -> EvaluationResult``.

The result (``evaluators.result``) holds validation accuracy as fitness, parameters, FLOPs
(multiply-accumulates), inference latency, the learning curve, timings, the device, peak memory and the input
normalisation, or a failure with a reason (``oom``, ``diverged``, ``timeout``, ``invalid``, ``error``). It never
raises (except ``KeyboardInterrupt``/``SystemExit``) and frees the model after a failure, so the next evaluation
in the same process runs as if nothing happened.
"""
from __future__ import annotations

import gc
import math
import os
import time
from pathlib import Path
from typing import Any, BinaryIO

import torch

from evaluators import measure, summary
from evaluators.budget import TrainingBudget
from evaluators.builders import architecture, as_space
from evaluators.datasets import load_dataset
from evaluators.reporting import Report, report_points, safe
from evaluators.result import PRUNED, EvaluationResult
from evaluators.training import Diverged, TimedOut, make_optimizer, train_one_epoch, validate


class Invalid(ValueError):
    """The genome, space, training budget, dataset name or device cannot be evaluated as given."""


def _finite(value: float | None) -> float | None:
    """``value`` as a plain float, ``None`` when it is NaN or infinite (JSON has neither)."""
    return float(value) if value is not None and math.isfinite(value) else None


def _is_oom(error: BaseException) -> bool:
    """CPU allocators and older CUDA builds raise a plain ``RuntimeError`` on out-of-memory."""
    text = str(error)
    return "out of memory" in text or "can't allocate memory" in text or "not enough memory" in text


def _parse(genome: Any, space: Any, training: Any, dataset: str, device: str) -> tuple:
    """Everything checked before any work: ``Invalid`` with the validator's message otherwise."""
    try:
        budget = training if isinstance(training, TrainingBudget) else TrainingBudget.from_dict(training)
        spec = architecture(genome, as_space(space), dataset)
        resolved = measure.resolve_device(device)
    except (ValueError, TypeError, KeyError, RuntimeError) as error:
        raise Invalid(str(error)) from None
    return budget, spec, resolved


def _run(genome: Any, space: Any, training: Any, dataset: str, device: str, fault: str | None,
         export_to: str | os.PathLike | None, weights_to: BinaryIO | None, report: dict[str, Any],
         held: dict[str, Any], latency: dict[str, Any] | None = None, progress: Report | None = None,
         report_every: int | None = None) -> None:
    """Build, train, validate and measure, filling ``report`` as it goes (so a failure keeps what was done);
    the model and optimizer live in ``held`` so the caller can free them after a failure."""
    started = time.perf_counter()
    budget, spec, resolved = _parse(genome, space, training, dataset, device)
    report["device"] = str(resolved)
    deadline = started + budget.max_seconds if budget.max_seconds is not None else None
    measure.start_memory(resolved)
    if resolved.type == "cuda":
        torch.backends.cudnn.benchmark = True  # full batches only, so each convolution is tuned once

    data = load_dataset(dataset, str(resolved), budget.seed)
    report["normalization"] = data.normalization
    report["timings"]["data"] = time.perf_counter() - started

    mark = time.perf_counter()
    with torch.random.fork_rng(devices=[]):  # seeded weights without touching the process's global RNG
        torch.manual_seed(budget.seed)
        from evaluators.blocks import Net

        held["model"] = model = Net(spec)
    model.to(resolved)
    if budget.precision == "bf16":
        model.to(memory_format=torch.channels_last)
    held["optimizer"] = optimizer = make_optimizer(model, budget)
    costs = summary.summarize(spec)
    report["metrics"].update(params=sum(p.numel() for p in model.parameters()), flops=costs["macs"],
                             precision=budget.precision, batch_size=min(budget.batch_size, len(data.train_x)))
    report["timings"]["build"] = time.perf_counter() - mark

    generator = torch.Generator().manual_seed(budget.seed)
    steps = len(data.train_x) // min(budget.batch_size, len(data.train_x))
    tell, points = safe(progress), set(report_points(steps, budget.epochs, report_every)) if progress else set()
    trained = 0
    known = {"params": report["metrics"]["params"], "flops": report["metrics"]["flops"]}  # for multi-objective pruning

    def reported(done: int) -> bool:
        """After each step: at a report point that is not an epoch's end, validate, report, maybe stop."""
        nonlocal trained
        trained = (epoch - 1) * steps + done
        if trained not in points or done == steps:
            return False
        val_loss, accuracy = validate(model, data.val_x, data.val_y, budget, deadline)
        model.train()
        report["curve"].append({"epoch": trained / steps, "step": trained, "val_loss": _finite(val_loss),
                                "val_accuracy": accuracy})
        report["metrics"].update(accuracy=accuracy, val_loss=_finite(val_loss), epochs=trained / steps)
        report["stopped"] = tell(trained, trained / steps, {"val_accuracy": accuracy, "val_loss": val_loss, **known})
        return report["stopped"]

    for epoch in range(1, budget.epochs + 1):
        mark = time.perf_counter()
        train_loss = train_one_epoch(model, data.train_x, data.train_y, optimizer, budget, generator, deadline, fault,
                                     after_step=reported if points else None)
        measure.synchronize(resolved)
        report["timings"]["train"] += time.perf_counter() - mark
        if report.get("stopped"):  # stopped mid-epoch: its last report is the curve's last point
            report["curve"][-1]["train_loss"] = _finite(train_loss)
            break
        mark = time.perf_counter()
        val_loss, accuracy = validate(model, data.val_x, data.val_y, budget, deadline)
        report["timings"]["validate"] += time.perf_counter() - mark
        report["curve"].append({"epoch": epoch, "step": epoch * steps, "train_loss": _finite(train_loss),
                                "val_loss": _finite(val_loss), "val_accuracy": accuracy})
        report["metrics"].update(accuracy=accuracy, train_loss=_finite(train_loss), val_loss=_finite(val_loss),
                                 epochs=epoch)
        if epoch < budget.epochs and epoch * steps in points and tell(epoch * steps, float(epoch), {
                "val_accuracy": accuracy, "val_loss": val_loss, "train_loss": train_loss, **known}):
            report["stopped"], trained = True, epoch * steps
            break
    trained = trained if report.get("stopped") else budget.epochs * steps
    report["metrics"]["steps"] = trained
    images = trained * min(budget.batch_size, len(data.train_x))
    report["metrics"]["images_per_second"] = images / max(report["timings"]["train"], 1e-9)
    mark = time.perf_counter()
    report["metrics"]["latency_ms"] = measure.latency_ms(model, data.shape, resolved, budget.precision)
    report["timings"]["latency"] = time.perf_counter() - mark
    if latency:
        from evaluators.schedule.network import measure_latency

        mark = time.perf_counter()
        report["metrics"].update(measure_latency(model, data.shape, resolved, latency))
        report["timings"]["schedule"] = time.perf_counter() - mark
    report["fitness"] = report["metrics"]["accuracy"]
    if weights_to is not None:
        from evaluators.export import save_weights

        mark = time.perf_counter()
        try:
            save_weights(model.state_dict(), weights_to)
        except Exception as error:  # as with exports: the evaluation succeeded, the weights are not there
            report["metrics"]["weights_error"] = f"{type(error).__name__}: {error}"
        report["timings"]["weights"] = time.perf_counter() - mark
    if export_to is not None:
        from evaluators.export import export_files

        mark = time.perf_counter()
        try:
            report["exported"] = [str(p) for p in export_files(genome, space, dataset, export_to, model.state_dict(),
                                                               data.normalization)]
        except Exception as error:  # the evaluation itself succeeded; a failed export is reported beside it
            report["metrics"]["export_error"] = f"{type(error).__name__}: {error}"
        report["timings"]["export"] = time.perf_counter() - mark


def evaluate(genome: Any, space: Any, training: dict[str, Any] | TrainingBudget | None, dataset: str, device: str, *,
             fault: str | None = None, export_to: str | os.PathLike | None = None,
             weights_to: BinaryIO | None = None, latency: dict[str, Any] | None = None,
             report: Report | None = None, report_every: int | None = None) -> EvaluationResult:
    """Train ``genome`` of ``space`` (a config dict or a ``SearchSpace``) on ``dataset`` under the ``training``
    budget (a ``TrainingBudget`` dict) on ``device``, and return its result; never raises.

    ``fault`` is a test hook passed to :func:`evaluators.training.train_one_epoch` (``"oom"`` or ``"nan"``).
    ``export_to``: a folder that receives the trained architecture's exports (``evaluators.export.export_files``:
    genome, standalone source, weights, ONNX); their names are in the result's ``artifacts``.
    ``weights_to``: a binary file that receives the trained weights (``evaluators.export.save_weights``) when
    the evaluation succeeds; left untouched otherwise.
    ``latency``: ``{"batch", "repeats"}`` to measure the trained network's optimal inference schedule
    (``evaluators.schedule``): metrics ``latency`` (ms) and ``schedule`` (the report).
    ``report``: called every ``report_every`` training steps (each epoch's end when ``None``) with the
    validation metrics (``evaluators.reporting``); when it answers ``True`` the training stops there and the
    result's status is ``pruned`` (its partial curve, its fitness the last accuracy, its weights as they were).
    """
    started, progress = time.perf_counter(), report
    report: dict[str, Any] = {"device": str(device), "fitness": None, "metrics": {}, "curve": [],
                              "timings": {"build": 0.0, "train": 0.0, "validate": 0.0}}
    held: dict[str, Any] = {}
    failure: tuple[str, str] | None = None
    try:
        _run(genome, space, training, dataset, device, fault, export_to, weights_to, report, held, latency, progress,
             report_every)
    except Invalid as error:
        failure = ("invalid", str(error))
    except Diverged as error:
        failure = ("diverged", str(error))
    except TimedOut as error:
        failure = ("timeout", str(error))
    except (torch.OutOfMemoryError, MemoryError) as error:
        failure = ("oom", f"{type(error).__name__}: {error}".strip())
    except Exception as error:  # a bug or a broken dataset is a result too, never a dead worker
        failure = ("oom" if _is_oom(error) else "error", f"{type(error).__name__}: {error}")
    # Recovery happens here, outside the except blocks: by now the exception and its traceback (whose frames
    # hold the activations) are released, so freeing the model really frees the memory.
    held.clear()
    peak = None
    try:
        peak = measure.peak_memory(torch.device(report["device"]))
    except Exception:
        pass
    if failure is not None:
        gc.collect()
        try:
            measure.free_memory(torch.device(report["device"]))
        except Exception:
            pass
    report["timings"]["total"] = time.perf_counter() - started
    fields = dict(
        metrics={key: _finite(value) if isinstance(value, float) else value for key, value in report["metrics"].items()},
        curve=report["curve"], timings=report["timings"], device=report["device"], peak_memory_bytes=peak,
        normalization=report.get("normalization") or None,
        artifacts={Path(p).name: Path(p).stat().st_size for p in report.get("exported", ())},
    )
    if failure is not None:
        return EvaluationResult.failed(failure[0], failure[1], **fields)
    return EvaluationResult(status=PRUNED if report.get("stopped") else "ok", fitness=report["fitness"], **fields)
