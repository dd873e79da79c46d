"""One rank of a gang: ``python -m evaluators.gang_rank JOB.json RANK``, started by
:func:`evaluators.data_parallel.evaluate_on_gang` (as a subprocess: Celery's pool processes are daemonic and may
not start ``multiprocessing`` children, celery#1709).

Each rank joins the gang's process group on localhost (gloo between CPU ranks, NCCL between GPUs) and runs the
one evaluation every device runs (:func:`evaluators.evaluate.evaluate_on_ranks`, whose loop,
:func:`evaluators.training.fit`, takes the world size as a parameter), or, for a job of ``"task": "supernet"``,
a one-shot search's supernet training on that loop (:func:`evaluators.supernet_training.supernet_on_ranks`). What this module adds is the gang's
folder, through which the ranks and the worker that watches them talk:

- ``alive.<rank>`` is touched at least every :data:`ALIVE_EVERY` seconds, ``training.<rank>`` after the first
  step (the worker's stall and start-up watchdogs read them);
- ``stop``, set by the worker, stops every rank at the next step (the ranks all-reduce the flag);
- the leader's progress reports go out as ``point.<n>.json`` and wait for the worker's ``answer.<n>`` (whether
  the pruner stops it), which every rank then learns at the same step;
- where the worker asks for it, the leader's scaling probe inside the training (its first steps' rate) goes out as
  ``probe.json`` and waits for ``probe.answer`` (whether the gang trains on: ``declined`` otherwise, at the same
  step on every rank);
- the leader writes ``weights.pt`` (when asked) and, last, ``result.json``.

A rank that fails alone (out of memory, a collective broken by a dead peer) writes nothing and exits non-zero
with its reason on its last line; the worker then stops the gang.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from evaluators import measure
from evaluators.evaluate import evaluate_on_ranks
from evaluators.compression import parse_compression
from evaluators.lifetime import die_with_parent
from evaluators.ranks import Gang
from evaluators.result import EvaluationResult
from evaluators.supernet_training import supernet_on_ranks

#: Seconds between two touches of a rank's alive file (the parent's stall watchdog reads it).
ALIVE_EVERY = 1.0
#: Failures that every rank meets at the same step (agreed, or in what every rank computes alike): the leader
#: writes them as the gang's result. Any other failure is this rank's alone.
SHARED_FAILURES = ("stopped", "timeout", "diverged", "invalid", "declined")


class FolderGang(Gang):
    """A rank of a gang whose outside world is its folder."""

    def __init__(self, device: torch.device, rank: int, devices: list[str], folder: Path, answer_seconds: float,
                 compression: Any = None):
        super().__init__(device, rank, devices, parse_compression(compression))
        self.folder, self.answer_seconds = folder, answer_seconds
        self.steps = 0
        self.touched = 0.0
        self.points = 0
        self.alive()

    def alive(self) -> None:
        now = time.monotonic()
        if now - self.touched >= ALIVE_EVERY:
            (self.folder / f"alive.{self.rank}").touch()
            self.touched = now

    def stepped(self) -> None:
        self.alive()
        self.steps += 1
        if self.steps == 1:
            (self.folder / f"training.{self.rank}").touch()

    def stop_requested(self) -> bool:
        return self.leader and (self.folder / "stop").exists()

    def relay(self, step: int, epoch: float, metrics: dict[str, float]) -> bool:
        """The leader's report: handed to the worker, whose answer says whether to stop (no answer: go on)."""
        self.points += 1
        point = self.folder / f"point.{self.points}.json"
        _write_atomic(point, json.dumps({"step": step, "epoch": epoch, "metrics": metrics}))
        return self._answer(self.folder / f"answer.{self.points}") == "stop"

    def relay_probe(self, rate: float | None, steps: float) -> bool:
        """The leader's scaling probe inside the training (``fit(on_probe=...)``): its rate handed to the worker,
        whose answer says whether the gang goes on training (no answer: go on)."""
        _write_atomic(self.folder / "probe.json", json.dumps({"rate": rate, "steps": steps}))
        return self._answer(self.folder / "probe.answer") != "stop"

    def _answer(self, path: Path) -> str | None:
        """The worker's answer written at ``path``; ``None`` past ``answer_seconds`` (a lost question never blocks
        the training, as on one device)."""
        waited = time.monotonic()
        while not path.exists():
            if time.monotonic() - waited > self.answer_seconds:
                return None
            self.alive()
            time.sleep(0.01)
        return path.read_text().strip()


def _write_atomic(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".part")
    partial.write_text(text)
    partial.replace(path)


def _run(job: dict[str, Any], ranks: FolderGang) -> EvaluationResult:
    folder = ranks.folder
    reports = bool(job.get("report"))
    on_point = (ranks.relay if ranks.leader else lambda *_: False) if reports else None
    if job.get("task") == "supernet":  # a one-shot search's supernet: the leader writes into the job's folder
        return supernet_on_ranks(job, ranks, on_point)
    weights = open(folder / "weights.pt", "wb") if job.get("weights") and ranks.leader else None
    try:
        return evaluate_on_ranks(job["genome"], job["space"], job["training"], job["dataset"],
                                 job["devices"][ranks.rank], ranks, fault=job.get("fault"),
                                 export_to=job.get("export_to") if ranks.leader else None, weights_to=weights,
                                 latency=job.get("latency"), report=on_point, report_every=job.get("report_every"),
                                 probe=job.get("probe"), on_probe=ranks.relay_probe if job.get("on_probe") else None)
    finally:
        if weights is not None:
            weights.close()


def main(argv: list[str]) -> int:
    job_path, rank = Path(argv[0]), int(argv[1])
    folder = job_path.parent
    job = json.loads(job_path.read_text())
    die_with_parent(signal.SIGKILL, int(job["parent"]))  # no rank outlives its worker
    world = len(job["devices"])
    torch.set_num_threads(max(1, int(job.get("threads", 1))))
    device = job["devices"][rank]
    backend = "gloo" if device == "cpu" else "nccl"
    # the rendezvous is a file of the gang's folder: no port to pick, none to collide with another gang's
    store = dist.FileStore(str(folder / "rendezvous"), world)
    timeout = float(job["collective_timeout"])
    dist.init_process_group(backend, store=store, rank=rank, world_size=world, timeout=dt.timedelta(seconds=timeout))
    ranks = FolderGang(measure.resolve_device(device), rank, job["devices"], folder, answer_seconds=timeout / 2,
                       compression=job.get("compression"))
    result = _run(job, ranks)
    if result.failure is not None and result.failure not in SHARED_FAILURES:
        print(f"{result.failure}: {' '.join(result.message.split())}", file=sys.stderr)
        return 1  # this rank's alone: the worker stops the gang and reports it
    if ranks.leader:
        _write_atomic(folder / "result.json", json.dumps(result.to_dict()))
    # Every rank gets here at the same point. Leave together: a rank tearing gloo down while another still
    # uses it can abort it.
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
