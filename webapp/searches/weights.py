"""The trained weights of a search's best individuals.

An evaluation worker leaves the weights it trained in Redis (``transport.put_weights``) before it pushes the
result. When the loop records results it calls :func:`keep_best` inside the same transaction: the weights of a
newly recorded individual that is among the best ``evaluation.keep_weights`` are stored (``Weights``), and the
kept weights of any individual pushed out of the best are deleted, so a search holds at most ``keep_weights``
of them. After the commit the loop drops what it read from Redis (:func:`transport.drop_weights`); a loop that
crashes before that finds the weights again when it re-reads the same messages.
"""
from __future__ import annotations

import hashlib

from webapp.searches import queries, transport
from webapp.searches.models import Individual, Search, Weights


def kept_count(search: Search) -> int:
    """How many of the best keep their weights (0 for simulated searches and those made before the option)."""
    return int(search.config.get("evaluation", {}).get("keep_weights", 0))


def keep_best(search: Search, recorded: list[Individual]) -> int:
    """Store the waiting weights of the ``recorded`` individuals that are among the ``kept_count`` best (by
    fitness, as the downloads rank them: ``queries.best_individuals``) and delete the kept weights of those
    pushed out; returns how many weights were stored."""
    keep = kept_count(search)
    if keep <= 0 or not any(i.status == Individual.Status.DONE for i in recorded):
        return 0
    best = set(queries.ranked(search).values_list("pk", flat=True)[:keep])
    entering = [i.pk for i in recorded if i.pk in best]
    if not entering:
        return 0  # nobody new among the best: the kept set is unchanged
    stored = 0
    for individual_id, data in transport.waiting_weights(search.pk, entering).items():
        Weights.objects.update_or_create(individual_id=individual_id, defaults={
            "data": data, "nbytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
        stored += 1
    Weights.objects.filter(individual__search=search).exclude(individual_id__in=best).delete()
    return stored


def drop_waiting(search: Search, messages: list[dict]) -> None:
    """After the loop committed ``messages``: the weights their results left in Redis are kept or not needed."""
    if kept_count(search) > 0:
        transport.drop_weights(search.pk, [m["individual"] for m in messages
                                           if m.get("type") == "result" and isinstance(m.get("individual"), int)])


def digest(individual: Individual) -> str | None:
    """The SHA-256 of ``individual``'s kept weights, or ``None`` when none are kept (no bytes read)."""
    return Weights.objects.filter(individual=individual).values_list("sha256", flat=True).first()


def of(individual: Individual) -> bytes | None:
    """The kept weights of ``individual`` (``torch.save`` bytes), or ``None``."""
    row = Weights.objects.filter(individual=individual).only("data").first()
    return None if row is None else bytes(row.data)
