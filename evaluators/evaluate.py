"""The one entry point: ``evaluate(genome, space, training, dataset, device) -> EvaluationResult``.

The result (``evaluators.result``) holds validation accuracy as fitness, parameters, FLOPs
(multiply-accumulates), inference latency, the learning curve, timings, the device, peak memory and the input
normalisation, or a failure with a reason (``oom``, ``diverged``, ``timeout``, ``invalid``, ``error``). It never
raises (except ``KeyboardInterrupt``/``SystemExit``) and frees the model after a failure, so the next evaluation
in the same process runs as if nothing happened.
"""
from __future__ import annotations

import gc
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

import torch

from evaluators import measure, summary
from evaluators.budget import TrainingBudget
from evaluators.builders import architecture, as_space
from evaluators.datasets import load_dataset
from evaluators.ranks import Ranks
from evaluators.reporting import Report
from evaluators.failure_text import describe
from evaluators.held_out import held_out_spec
from evaluators.result import PRUNED, EvaluationResult
from evaluators.training import Declined, Diverged, Stopped, TimedOut, finite, fit, make_optimizer, step_rate


class Invalid(ValueError):
    """The genome, space, training budget, dataset name or device cannot be evaluated as given."""


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


def _run(genome: Any, space: Any, training: Any, dataset: str, device: str, ranks: Ranks | None, fault: str | None,
         export_to: str | os.PathLike | None, weights_to: BinaryIO | None, report: dict[str, Any],
         held: dict[str, Any], latency: dict[str, Any] | None, progress: Report | None,
         report_every: int | None, probe: int | None = None, on_probe: Any = None) -> None:
    """Build, train (:func:`evaluators.training.fit`), validate and measure, filling ``report`` as it goes (so a
    failure keeps what was done); the model and optimizer live in ``held`` so the caller can free them after a
    failure. The gang's leader, like a lone device, then measures latency and writes weights and exports."""
    started = time.perf_counter()
    budget, spec, resolved = _parse(genome, space, training, dataset, device)
    ranks = ranks if ranks is not None else Ranks(resolved)
    report["device"] = ranks.label
    deadline = started + budget.max_seconds if budget.max_seconds is not None else None
    measure.start_memory(resolved)
    if resolved.type == "cuda":
        torch.backends.cudnn.benchmark = True  # full batches only, so each convolution is tuned once

    data = load_dataset(dataset, str(resolved), budget.seed)
    report["normalization"] = data.normalization
    if data.loading:  # a registered set: kept in memory or streamed from disk, and what that takes
        report["metrics"]["data_loading"] = data.loading
    report["timings"]["data"] = time.perf_counter() - started

    mark = time.perf_counter()
    with torch.random.fork_rng(devices=[]):  # seeded weights without touching the process's global RNG
        torch.manual_seed(budget.seed)
        from evaluators.blocks import Net

        held["model"] = model = Net(spec)  # the same weights on every rank of a gang
    model.to(resolved)
    if budget.precision == "bf16":
        model.to(memory_format=torch.channels_last)
    held["optimizer"] = optimizer = make_optimizer(model, budget)  # one device's learning rate: same global batch
    batch = min(budget.batch_size, len(data.train_x))
    report["metrics"].update(params=sum(p.numel() for p in model.parameters()), flops=summary.summarize(spec)["macs"],
                             precision=budget.precision, batch_size=batch // ranks.world * ranks.world)
    report["timings"]["build"] = time.perf_counter() - mark

    if probe:  # a scaling probe (``webapp.worker.rate_probe``): a few timed steps of the same loop, nothing kept
        report["metrics"].update({f"probe_{k}": v for k, v in step_rate(model, optimizer, data, budget, ranks, probe,
                                                                        deadline=deadline).items()})
        report["fitness"] = 0.0
        return
    fit(model, optimizer, data, budget, ranks, report, deadline=deadline, fault=fault, on_point=progress,
        report_every=report_every, on_probe=on_probe)
    report["fitness"] = report["metrics"]["accuracy"]
    if ranks.leader:
        _finish(model, data, resolved, budget, report, genome, space, dataset, latency, weights_to, export_to)


def _finish(model: torch.nn.Module, data: Any, device: torch.device, budget: TrainingBudget, report: dict[str, Any],
            genome: Any, space: Any, dataset: str, latency: dict[str, Any] | None, weights_to: BinaryIO | None,
            export_to: str | os.PathLike | None) -> None:
    """What follows a training: the held-out test set's score (a search with ``data.test``), inference latency
    (and the optimal schedule when asked), weights, exports."""
    held_out = held_out_spec(dataset)
    if held_out is not None:
        from evaluators.held_out import score

        mark = time.perf_counter()
        try:
            report["metrics"].update(score(model, held_out, data.normalization, device, budget))
        except Exception as error:  # the evaluation itself succeeded; the held-out set is reported beside it
            report["metrics"]["held_out_error"] = describe(error)[:500]
        report["timings"]["held_out"] = time.perf_counter() - mark
    mark = time.perf_counter()
    report["metrics"]["latency_ms"] = measure.latency_ms(model, data.shape, device, budget.precision)
    report["timings"]["latency"] = time.perf_counter() - mark
    if latency:
        from evaluators.inference.network import measure_latency

        mark = time.perf_counter()
        report["metrics"].update(measure_latency(model, data.shape, device, latency))
        report["timings"]["schedule"] = time.perf_counter() - mark
    if weights_to is not None:
        from evaluators.model_files import save_weights

        mark = time.perf_counter()
        try:
            save_weights(model.state_dict(), weights_to)
        except Exception as error:  # as with exports: the evaluation succeeded, the weights are not there
            report["metrics"]["weights_error"] = f"{type(error).__name__}: {error}"
        report["timings"]["weights"] = time.perf_counter() - mark
    if export_to is not None:
        from evaluators.model_files import export_files

        mark = time.perf_counter()
        try:
            report["exported"] = [str(p) for p in export_files(genome, space, dataset, export_to, model.state_dict(),
                                                               data.normalization)]
        except Exception as error:  # the evaluation itself succeeded; a failed export is reported beside it
            report["metrics"]["export_error"] = f"{type(error).__name__}: {error}"
        report["timings"]["export"] = time.perf_counter() - mark


def evaluate(genome: Any, space: Any, training: dict[str, Any] | TrainingBudget | None, dataset: str,
             device: str | Sequence[str], *, fault: str | None = None, export_to: str | os.PathLike | None = None,
             weights_to: BinaryIO | None = None, latency: dict[str, Any] | None = None,
             report: Report | None = None, report_every: int | None = None, probe: int | None = None,
             on_probe: Any = None, **gang: Any) -> EvaluationResult:
    """Train ``genome`` of ``space`` (a config dict or a ``SearchSpace``) on ``dataset`` under the ``training``
    budget (a ``TrainingBudget`` dict) on ``device``, and return its result; never raises.

    ``device``: one device (``cpu``, ``cuda:1``), trained in this process; or a list of this host's devices, a
    data-parallel gang of one rank each (:func:`evaluators.data_parallel.evaluate_on_gang`, which takes the
    ``gang`` options), trained by the same loop with everything below holding alike.
    ``fault`` is a test hook passed to :func:`evaluators.training.train_one_epoch` (``"oom"`` or ``"nan"``).
    ``export_to``: a folder that receives the trained architecture's exports (``evaluators.model_files.export_files``:
    genome, standalone source, weights, ONNX); their names are in the result's ``artifacts``.
    ``weights_to``: a binary file that receives the trained weights (``evaluators.model_files.save_weights``) when
    the evaluation succeeds; left untouched otherwise.
    ``latency``: ``{"batch", "repeats"}`` to measure the trained network's optimal inference schedule
    (``evaluators.inference``): metrics ``latency`` (ms) and ``schedule`` (the report).
    ``report``: called every ``report_every`` training steps (each epoch's end when ``None``) with the
    validation metrics (``evaluators.reporting``); when it answers ``True`` the training stops there and the
    result's status is ``pruned`` (its partial curve, its fitness the last accuracy, its weights as they were).
    ``probe``: instead of the training, a scaling probe of that many timed steps after a warm-up step
    (:func:`evaluators.training.step_rate`): metrics ``probe_rate`` (steps per second) and ``probe_steps``.
    ``on_probe``: the scaling probe inside the training (``evaluators.training.fit``; on a gang, the leader's,
    answered in this process): called with the first steps' rate and the training's steps, ``False`` ends the
    evaluation there (failure ``declined``).
    """
    options = dict(fault=fault, export_to=export_to, weights_to=weights_to, latency=latency, report=report,
                   report_every=report_every, probe=probe)
    if isinstance(device, str):
        return evaluate_on_ranks(genome, space, training, dataset, device, None, on_probe=on_probe, **options)
    from evaluators.data_parallel import evaluate_on_gang

    return evaluate_on_gang(genome, space, training, dataset, list(device), on_probe=on_probe, **options, **gang)


def evaluate_on_ranks(genome: Any, space: Any, training: dict[str, Any] | TrainingBudget | None, dataset: str,
                      device: str, ranks: Ranks | None, *, fault: str | None = None,
                      export_to: str | os.PathLike | None = None, weights_to: BinaryIO | None = None,
                      latency: dict[str, Any] | None = None, report: Report | None = None,
                      report_every: int | None = None, probe: int | None = None,
                      on_probe: Any = None) -> EvaluationResult:
    """:func:`evaluate` on ``device`` as one rank of ``ranks`` (``None``: alone), what every rank of a gang runs
    (``evaluators.gang_rank``); never raises. On a gang, only the leader's result is the gang's."""
    started, progress = time.perf_counter(), report
    report: dict[str, Any] = {"device": str(device) if ranks is None else ranks.label, "fitness": None,
                              "metrics": {}, "curve": [], "timings": {"build": 0.0, "train": 0.0, "validate": 0.0}}
    held: dict[str, Any] = {}
    failure: tuple[str, str] | None = None
    try:
        _run(genome, space, training, dataset, device, ranks, fault, export_to, weights_to, report, held, latency,
             progress, report_every, probe, on_probe)
    except Invalid as error:
        failure = ("invalid", str(error))
    except Diverged as error:
        failure = ("diverged", str(error))
    except TimedOut as error:
        failure = ("timeout", str(error))
    except Stopped as error:
        failure = ("stopped", str(error))
    except Declined as error:
        failure = ("declined", str(error))
    except (torch.OutOfMemoryError, MemoryError) as error:
        failure = ("oom", f"{type(error).__name__}: {error}".strip())
    except Exception as error:  # a bug or a broken dataset is a result too, never a dead worker
        failure = ("oom" if _is_oom(error) else "error", describe(error))  # with its traceback's last frames
    # Recovery happens here, outside the except blocks: by now the exception and its traceback (whose frames
    # hold the activations) are released, so freeing the model really frees the memory.
    held.clear()
    peak = None
    try:
        peak = measure.peak_memory(torch.device(device))
    except Exception:
        pass
    if failure is not None:
        gc.collect()
        try:
            measure.free_memory(torch.device(device))
        except Exception:
            pass
    report["timings"]["total"] = time.perf_counter() - started
    fields = dict(
        metrics={key: finite(value) if isinstance(value, float) else value for key, value in report["metrics"].items()},
        curve=report["curve"], timings=report["timings"], device=report["device"], peak_memory_bytes=peak,
        normalization=report.get("normalization") or None,
        artifacts={Path(p).name: Path(p).stat().st_size for p in report.get("exported", ())},
    )
    if failure is not None:
        return EvaluationResult.failed(failure[0], failure[1], **fields)
    return EvaluationResult(status=PRUNED if report.get("stopped") else "ok", fitness=report["fitness"], **fields)
