"""The evaluation worker's side of a one-shot search (seed 003): the three kinds of evaluation its loop sends
(``evaluation.mode``), each a thin call into ``evaluators``.

- ``supernet``: the supernet's training, one long evaluation (``evaluators.supernet_training``) on every device
  the slot holds (a gang worker's gang trains it data parallel), reporting loss and the sampled paths'
  validation accuracy, per device too, after each epoch; its checkpoint goes to Redis after each epoch, so
  a worker anywhere that takes the training over (a lost worker, a stop and resume) goes on from it; a stop of
  the search hands it back (``hand_back.HandedBack``: reported skipped, sent again on resume). The trained
  weights go to Redis under their digest.
- ``path``: one path scored with the supernet's weights (``evaluators.path_scoring``), fetched from Redis once
  per digest per process (the supernet stays loaded between paths, as a weight search's weights do); its
  fitness is the validation accuracy, or the negated validation loss with ``evaluation.score: "loss"``.
- a stand-alone training of the ranking check (mode ``train`` with ``supernet_digest``): the ordinary training,
  then the same path's supernet score added to its metrics (``supernet_score``, ``supernet_loss``); a repeated
  training of the check (no ``supernet_digest``) is the ordinary training alone.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from evaluators.reporting import Report
from evaluators.result import EvaluationResult
from webapp.messaging import oneshot_transport, transport
from webapp.worker import hand_back, lost_ranks

#: Why a stopped search's supernet training is handed back (the runner's log and the skipped message say it).
STOPPED = "the search was stopped: the supernet's training goes on from its checkpoint on resume"


def train_supernet(individual: dict[str, Any], held: list[str], report: Report | None) -> EvaluationResult:
    """The supernet's training on the devices this slot holds (``held``: one, or a gang worker's gang, one rank
    each), from the last checkpoint in Redis if there is one."""
    from evaluators.supernet_training import CHECKPOINT, WEIGHTS, train_supernet_on

    search = individual["search"]
    folder = Path(tempfile.mkdtemp(prefix=f"nas-supernet-{search}-"))
    try:
        saved = oneshot_transport.checkpoint(search)
        if saved is not None:
            (folder / CHECKPOINT).write_bytes(saved)

        def told(step: int, epoch: float, metrics: dict[str, float]) -> bool:
            oneshot_transport.put_checkpoint(search, (folder / CHECKPOINT).read_bytes())  # written before each report
            stop = bool(report(step, epoch, metrics)) if report is not None else False
            return stop or transport.is_stopped(search)

        supernet = individual["evaluation"]["supernet"]
        training = {k: v for k, v in supernet.items() if k not in ("sampling", "probes")}
        result = lost_ranks.again_if_rank_lost(lambda: train_supernet_on(  # again from the leader's checkpoint
            held, individual["space"], individual["dataset"], training, folder, probes=supernet["probes"],
            report=told), held)
        if result.failure == "stopped":
            raise hand_back.HandedBack(STOPPED)
        if not result.ok:
            return result
        data = (folder / WEIGHTS).read_bytes()
        oneshot_transport.put_supernet(search, result.metrics["digest"], data)
        return result.with_fields(metrics={**result.metrics, "supernet_bytes": len(data)})
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def supernet_score(individual: dict[str, Any], digest: str, device: str) -> dict[str, Any]:
    """The path's score with the supernet of ``digest`` (its weights fetched from Redis unless this process holds
    them): ``evaluators.path_scoring.score_paths``'s answer for the one path."""
    from evaluators.path_scoring import score_paths

    arguments = ([individual["genome"]], individual["space"], individual["dataset"])
    options = {"digest": digest, "device": device, "seed": individual["training"]["seed"],
               "precision": individual["training"].get("precision", "fp32")}
    try:
        return score_paths(*arguments, **options)
    except ValueError:  # not held by this process: fetched once, then held
        data = oneshot_transport.supernet(individual["search"], digest)
        if data is None:
            raise ValueError(f"the supernet weights of digest {digest} are not in Redis") from None
        return score_paths(*arguments, weights=data, **options)


def score_path(individual: dict[str, Any], held: list[str]) -> EvaluationResult:
    """One path scored with the supernet's weights: its fitness is that score."""
    scored = supernet_score(individual, individual["evaluation"]["digest"], held[0])
    found = scored["results"][0]
    if found["status"] != "ok":
        return EvaluationResult.failed("invalid", found.get("reason", "not scored"), timings=scored["timings"])
    by_loss = individual["evaluation"].get("score") == "loss"
    fitness = -found["val_loss"] if by_loss else found["accuracy"]
    return EvaluationResult(status="ok", fitness=fitness, device=held[0], timings={
        **found["timings"], "load": scored["timings"]["load"], "total": scored["timings"]["total"]},
        metrics={"accuracy": found["accuracy"], "val_loss": found["val_loss"], "supernet_score": fitness,
                 "digest": scored["digest"]})


def with_supernet_score(individual: dict[str, Any], held: list[str], result: EvaluationResult) -> EvaluationResult:
    """A ranking check's stand-alone result with the same path's supernet score (accuracy, ``supernet_score``,
    and validation loss, ``supernet_loss``) among its metrics."""
    found = supernet_score(individual, individual["evaluation"]["supernet_digest"], held[0])["results"][0]
    return result.with_fields(metrics={**result.metrics, "supernet_score": found["accuracy"],
                                       "supernet_loss": found["val_loss"]})
