"""The files kept for a search's best individuals: trained weights, standalone source, ONNX.

An evaluation worker leaves a trained individual's files in Redis (``transport.put_kept``, see
``webapp.worker.artifacts``) before it pushes the result. When the loop records results it calls
:func:`keep_best` inside the same transaction: the files of a newly recorded individual that is among the best
``evaluation.keep_weights`` are stored (``Weights``), and those of any individual pushed out of the best are
deleted, so a search holds at most ``keep_weights`` of them. It then tells the workers the fitness a result must
now reach to be kept (``transport.set_admission``), so the others skip their exports. After the commit the loop
drops what it read from Redis (:func:`drop_waiting`); a loop that crashes before that finds the files again
when it re-reads the same messages.
"""
from __future__ import annotations

import hashlib

from webapp.messaging import transport
from webapp.searches.models import Individual, Search, Weights
from webapp.searches.ranking import ranked


def kept_count(search: Search) -> int:
    """How many of the best keep their files (0 for simulated searches and those made before the option)."""
    return int(search.config.get("evaluation", {}).get("keep_weights", 0))


def keep_best(search: Search, recorded: list[Individual]) -> int:
    """Store the waiting files of the ``recorded`` individuals that are among the ``kept_count`` best (by fitness,
    as the downloads rank them) and delete the kept files of those pushed out; returns how many were stored."""
    keep = kept_count(search)
    if keep <= 0 or not any(i.status == Individual.Status.DONE for i in recorded):
        return 0
    best = list(ranked(search).values_list("pk", "fitness")[:keep])
    if len(best) == keep:  # full: a result must now beat the last of them to be kept
        transport.set_admission(search.pk, best[-1][1])
    best_ids = {pk for pk, _ in best}
    entering = [i.pk for i in recorded if i.pk in best_ids]
    if not entering:
        return 0  # nobody new among the best: the kept set is unchanged
    stored = 0
    for individual_id, files in transport.waiting_kept(search.pk, entering).items():
        if not files.get("weights.pt"):
            continue
        _store(individual_id, files)
        stored += 1
    Weights.objects.filter(individual__search=search, individual__role=Individual.Role.SEARCH).exclude(
        individual_id__in=best_ids).delete()  # a final run's files are the search's result: always kept
    return stored


def keep_files(search: Search, individuals: list[Individual]) -> int:
    """Store the waiting files of ``individuals`` whatever their rank (the final runs: each is kept), and drop
    them from Redis after the caller's commit (:func:`drop_waiting` with ``always``); returns how many."""
    stored = 0
    for individual_id, files in transport.waiting_kept(search.pk, [i.pk for i in individuals]).items():
        if files.get("weights.pt"):
            _store(individual_id, files)
            stored += 1
    return stored


def _store(individual_id: int, files: dict[str, bytes]) -> None:
    data = files["weights.pt"]
    Weights.objects.update_or_create(individual_id=individual_id, defaults={
        "data": data, "nbytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
        "source": files.get("model.py", b"").decode("utf-8", "replace"), "onnx": files.get("model.onnx")})


def drop_waiting(search: Search, individual_ids: list[int], always: bool = False) -> None:
    """After the loop committed the results of ``individual_ids``: their files in Redis are kept or not needed
    (``always``: final runs leave files even where the search keeps none)."""
    if always or kept_count(search) > 0:
        transport.drop_kept(search.pk, individual_ids)
