"""One evaluation on a gang of devices of this host: ``evaluate_on_gang(genome, space, training, dataset,
devices) -> EvaluationResult``, which never raises, like ``evaluators.evaluate.evaluate``. Its launcher,
:func:`run_gang`, is the one every gang goes through: a one-shot search's supernet training uses it too
(``evaluators.supernet_training.train_supernet_on``, a job of ``"task": "supernet"``).

It starts one rank per device as a subprocess (``python -m evaluators.gang_rank``; Celery's pool processes are
daemonic and cannot start ``multiprocessing`` children, celery#1709), rendezvous through a file of a private
folder (on this host only), and watches them:

- every rank runs the one training every device runs (:mod:`evaluators.gang_rank`); rank 0, the leader, writes the
  result, whose ``device`` lists every device of the gang, and does what a lone device does after training:
  latency, the optimal schedule (``latency``), weights (``weights_to``), exports (``export_to``);
- the leader's progress reports reach ``report`` here, and its answer (stop: a pruned result) reaches every
  rank at the same step;
- ``should_stop()`` (polled) sets the stop flag every rank sees at its next step;
- a rank that dies (killed, crashed) fails the whole evaluation at once: the others are killed and the result is
  ``rank_lost`` (killed by a signal: worth another attempt) or ``error``/``oom`` with the rank's last line;
- a rank that stops making progress for ``stall_seconds`` (a hung collective outlives its ``collective_timeout``)
  or never starts within ``startup_seconds`` fails it too; no rank is ever left behind (each is also tied to this
  process's life with ``PR_SET_PDEATHSIG``).

Imports no torch: the worker that calls it stays light, the ranks load PyTorch themselves.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from evaluators.budget import TrainingBudget
from evaluators.compression import parse_compression
from evaluators.reporting import Report, safe
from evaluators.result import EvaluationResult, MalformedResult
from nas.spaces import space_from_config, space_to_config
from nas.spaces.base import SearchSpace

ROOT = Path(__file__).resolve().parent.parent
#: A rank killed by a signal lost its attempt, not the candidate: the worker may try again (``NAS_MAX_ATTEMPTS``).
RANK_LOST = "rank_lost"


def devices_of(result: EvaluationResult) -> list[str]:
    """The devices an evaluation held, from its result's ``device`` (``cpu,cpu`` for a gang of two CPU ranks)."""
    return [part for part in result.device.split(",") if part] or [""]


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1].strip()[:500] if lines else ""


def _death(rank: int, device: str, code: int, stderr: Path) -> tuple[str, str]:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        line = _last_line(stderr)  # an abort (SIGABRT) says why on its last line
        return RANK_LOST, (f"rank {rank} ({device}) of the gang was killed by {name}; the gang was stopped"
                           + (f" (its last line: {line})" if line else ""))
    line = _last_line(stderr)
    reason = "oom" if line.startswith("oom:") or "out of memory" in line.lower() else "error"
    return reason, f"rank {rank} ({device}) of the gang exited with code {code}: {line or 'no message'}"


def evaluate_on_gang(genome: Any, space: SearchSpace | dict[str, Any], training: dict[str, Any] | TrainingBudget | None,
                     dataset: str, devices: Sequence[str], *, should_stop: Callable[[], bool] | None = None,
                     on_ranks: Callable[[list[int], Path], None] | None = None, collective_timeout: float = 60.0,
                     startup_seconds: float = 180.0, stall_seconds: float | None = None, threads: int | None = None,
                     poll: float = 0.1, fault: str | None = None, export_to: str | os.PathLike | None = None,
                     weights_to: BinaryIO | None = None, latency: dict[str, Any] | None = None,
                     report: Report | None = None, report_every: int | None = None,
                     compression: Any = None, probe: int | None = None,
                     on_probe: Callable[[float | None, float], bool] | None = None) -> EvaluationResult:
    """Train ``genome`` on the ``devices`` of this host (one rank each; ``cpu`` may repeat) and return rank 0's
    result; never raises. ``compression``: how the ranks exchange gradients (``evaluation.compression``, see
    :mod:`evaluators.compression`; ``None``: dense). ``fault``, ``export_to``, ``weights_to``, ``latency``,
    ``report``, ``report_every``, ``probe`` and ``on_probe`` (asked here, with the leader's rate) are
    :func:`evaluators.evaluate.evaluate`'s. ``on_ranks`` receives the ranks' process ids and the gang's folder
    once they are started (where ``training.<rank>`` appears after a rank's first step; tests use it);
    ``threads``: PyTorch threads per CPU rank (default: this host's cores shared out among the ranks)."""
    started = time.perf_counter()
    joined = ",".join(devices)
    try:
        budget = training if isinstance(training, TrainingBudget) else TrainingBudget.from_dict(training)
        space_config = space if isinstance(space, dict) else space_to_config(space)
        space_from_config(space_config).validate(genome)
        compression = parse_compression(compression).to_config()
    except (ValueError, TypeError, KeyError) as error:
        return EvaluationResult.failed("invalid", str(error), device=joined)
    job = {"genome": genome, "space": space_config, "training": budget.to_dict(), "dataset": dataset,
           "fault": fault, "export_to": None if export_to is None else str(export_to), "weights": weights_to is not None,
           "latency": latency, "report_every": report_every, "compression": compression, "probe": probe,
           "on_probe": on_probe is not None}
    return run_gang(job, devices, budget, should_stop=should_stop, on_ranks=on_ranks,
                    collective_timeout=collective_timeout, startup_seconds=startup_seconds,
                    stall_seconds=stall_seconds, threads=threads, poll=poll, weights_to=weights_to, report=report,
                    started=started, on_probe=on_probe)


def run_gang(job: dict[str, Any], devices: Sequence[str], budget: TrainingBudget, *,
             should_stop: Callable[[], bool] | None = None, on_ranks: Callable[[list[int], Path], None] | None = None,
             collective_timeout: float = 60.0, startup_seconds: float = 180.0, stall_seconds: float | None = None,
             threads: int | None = None, poll: float = 0.1, weights_to: BinaryIO | None = None,
             report: Report | None = None, started: float | None = None,
             on_probe: Callable[[float | None, float], bool] | None = None) -> EvaluationResult:
    """Run ``job`` (what :mod:`evaluators.gang_rank` runs on each rank: a genome's evaluation, or with ``"task":
    "supernet"`` a supernet's training) on ``devices``, one rank each, watched as the module says; rank 0's result.
    ``budget``: the job's training (its ``max_seconds`` caps the gang); the other options are
    :func:`evaluate_on_gang`'s. Never raises."""
    started = time.perf_counter() if started is None else started
    joined = ",".join(devices)
    if not devices:
        return EvaluationResult.failed("invalid", "a gang needs at least one device")
    if len({d.split(":")[0] for d in devices}) > 1:
        return EvaluationResult.failed("invalid", f"a gang's devices must be all cpu or all cuda:N (got {joined})",
                                       device=joined)
    folder = Path(tempfile.mkdtemp(prefix="nas-gang-"))
    job = {**job, "devices": list(devices), "parent": os.getpid(), "collective_timeout": collective_timeout,
           "threads": threads or max(1, (os.cpu_count() or 1) // len(devices)), "report": report is not None}
    (folder / "job.json").write_text(json.dumps(job))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": str(job["threads"])}
    ranks: list[subprocess.Popen] = []
    stall = stall_seconds if stall_seconds is not None else collective_timeout + 30.0
    try:
        for rank in range(len(devices)):
            with open(folder / f"stdout.{rank}", "wb") as out, open(folder / f"stderr.{rank}", "wb") as err:
                ranks.append(subprocess.Popen([sys.executable, "-m", "evaluators.gang_rank", str(folder / "job.json"),
                                               str(rank)], cwd=ROOT, env=env, stdout=out, stderr=err,
                                              stdin=subprocess.DEVNULL, start_new_session=True))
        if on_ranks is not None:
            on_ranks([rank.pid for rank in ranks], folder)
        failure = _watch(ranks, devices, folder, should_stop, safe(report), started, budget, startup_seconds, stall,
                         poll, on_probe)
    except BaseException:  # interrupted (a paused node hands its evaluation back): no rank, no folder left
        _kill(ranks)
        shutil.rmtree(folder, ignore_errors=True)
        raise
    _kill(ranks)
    total = time.perf_counter() - started
    try:
        if failure is None:
            result = EvaluationResult.from_dict(json.loads((folder / "result.json").read_text()))
            if weights_to is not None and result.status != "failed" and (folder / "weights.pt").exists():
                with open(folder / "weights.pt", "rb") as weights:
                    shutil.copyfileobj(weights, weights_to)
            return result.with_fields(timings={**result.timings, "total": total})
        return EvaluationResult.failed(failure[0], failure[1], device=joined, timings={"total": total})
    except (OSError, ValueError, MalformedResult) as error:
        return EvaluationResult.failed("error", f"rank 0 left no readable result: {error}", device=joined,
                                       timings={"total": total})
    finally:
        for path in folder.iterdir():
            path.unlink(missing_ok=True)
        folder.rmdir()


def _answer(folder: Path, report: Report, answered: int) -> int:
    """Answer the leader's progress reports that wait (``point.<n>.json``); returns the last one answered."""
    while (folder / f"point.{answered + 1}.json").exists():
        answered += 1
        try:
            point = json.loads((folder / f"point.{answered}.json").read_text())
            stop = report(int(point["step"]), float(point["epoch"]), dict(point["metrics"]))
        except (OSError, ValueError, KeyError, TypeError):
            stop = False
        partial = folder / f"answer.{answered}.part"
        partial.write_text("stop" if stop else "go on")
        partial.replace(folder / f"answer.{answered}")
    return answered


def _answer_probe(folder: Path, on_probe: Callable[[float | None, float], bool] | None) -> None:
    """Answer the leader's scaling probe (``probe.json``) once it waits: ``go on`` unless ``on_probe`` declines
    (one that fails is no answer against the training: it goes on)."""
    if on_probe is None or not (folder / "probe.json").exists() or (folder / "probe.answer").exists():
        return
    try:
        asked = json.loads((folder / "probe.json").read_text())
        rate = None if asked.get("rate") is None else float(asked["rate"])
        go_on = bool(on_probe(rate, float(asked["steps"])))
    except (OSError, ValueError, KeyError, TypeError):
        go_on = True
    partial = folder / "probe.answer.part"
    partial.write_text("go on" if go_on else "stop")
    partial.replace(folder / "probe.answer")


def _watch(ranks: list[subprocess.Popen], devices: Sequence[str], folder: Path,
           should_stop: Callable[[], bool] | None, report: Report, started: float, budget: TrainingBudget,
           startup_seconds: float, stall: float, poll: float,
           on_probe: Callable[[float | None, float], bool] | None = None) -> tuple[str, str] | None:
    """Wait for every rank to end, answering the leader's reports and its probe; the failure (reason, message) when
    one dies, stalls or never starts."""
    cap = None if budget.max_seconds is None else budget.max_seconds + startup_seconds
    stopping = False
    answered = 0
    while True:
        answered = _answer(folder, report, answered)
        _answer_probe(folder, on_probe)
        codes = [rank.poll() for rank in ranks]
        if codes[0] == 0 and (folder / "result.json").exists():
            return None  # rank 0 wrote the gang's result: a rank dying while the gang leaves cannot change it
        # A rank killed by a signal first: its peers then fail in their collectives, which is not their fault.
        for index, code in sorted(enumerate(codes), key=lambda pair: (pair[1] is None or pair[1] >= 0, pair[0])):
            if code not in (None, 0):
                return _death(index, devices[index], code, folder / f"stderr.{index}")
        if all(code == 0 for code in codes):
            return None
        now = time.time()
        for index in range(len(ranks)):
            if codes[index] is not None:
                continue
            if not (folder / f"training.{index}").exists():  # importing torch, loading data, meeting the others
                if time.perf_counter() - started > startup_seconds:
                    return "error", (f"rank {index} ({devices[index]}) did not start training within "
                                     f"{startup_seconds:g} s")
                continue
            try:
                quiet = now - (folder / f"alive.{index}").stat().st_mtime
            except FileNotFoundError:
                continue
            if quiet > stall:
                return "error", f"rank {index} ({devices[index]}) made no progress for {quiet:.0f} s: the gang hung"
        if cap is not None and time.perf_counter() - started > cap:
            return "timeout", f"the gang ran past max_seconds {budget.max_seconds:g} s plus {startup_seconds:g} s"
        if not stopping and should_stop is not None and should_stop():
            (folder / "stop").touch()  # every rank learns it at its next step
            stopping = True
        time.sleep(poll)


def _kill(ranks: list[subprocess.Popen]) -> None:
    """SIGKILL every rank still running (its whole session) and reap them all."""
    for rank in ranks:
        if rank.poll() is None:
            try:
                os.killpg(rank.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                rank.kill()
    for rank in ranks:
        try:
            rank.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
