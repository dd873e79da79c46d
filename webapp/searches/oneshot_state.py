"""A one-shot search's state as the loop, the page and the API read it (``webapp.control.oneshot_loop`` writes
it): its supernet individual, its ranking check's individuals, the supernet's digest, the phase the loop last
stored and the summary the page's panel and the API's ``oneshot`` and ``tau`` show. Reads only."""
from __future__ import annotations

from typing import Any

from django.db.models import Sum

from nas.oneshot.devices import per_device
from webapp.searches.models import Individual, Search

#: The role of each phase's evaluations.
ROLES = {"supernet": Individual.Role.SUPERNET, "paths": Individual.Role.SEARCH, "check": Individual.Role.CHECK,
         "final": Individual.Role.FINAL}
#: The phases in order, as the page names them.
PHASES = {"supernet": "supernet training", "paths": "path search", "check": "ranking check",
          "final": "final training"}


def supernet(search: Search | int) -> Individual | None:
    return Individual.objects.filter(search=search, role=Individual.Role.SUPERNET).order_by("number").first()


def checks(search: Search | int):
    """The ranking check's paths, in order."""
    return Individual.objects.filter(search=search, role=Individual.Role.CHECK).order_by("number")


def digest(search: Search | int) -> str | None:
    """The trained supernet's weights digest (``None`` before it is trained)."""
    row = supernet(search)
    return None if row is None or row.status != Individual.Status.DONE else (row.metrics or {}).get("digest")


def ranking(search: Search) -> dict[str, Any] | None:
    """The ranking check's result: ``tau``, ``low``, ``high`` (its interval), ``n``, ``method`` and ``points``
    (each path's ``supernet`` score and ``standalone`` accuracy); ``None`` until it is done."""
    return ((search.stats or {}).get("oneshot") or {}).get("ranking")


def tau(search: Search) -> dict[str, Any] | None:
    """What the API's search reports as ``tau``: Kendall's tau with its interval and what it compared (``score``,
    ``reference``, ``repeats``, ``against`` in words, and ``reference_noise``: how two stand-alone trainings of the
    same paths agree, and the ceiling that sets; ``None`` for a check made before they existed, or with one
    training), once the check is done."""
    found = ranking(search)
    if found is None:
        return None
    return {name: found.get(name) for name in ("tau", "low", "high", "confidence", "n", "method", "score",
                                               "reference", "repeats", "against", "reference_noise")}


def phase_seconds(search: Search | int) -> dict[str, float]:
    """Seconds of evaluation per phase: the sum of its evaluations' durations on their workers (slot-seconds;
    a gang's count once)."""
    sums = dict(Individual.objects.filter(search=search).values_list("role").annotate(seconds=Sum("duration")))
    return {phase: float(sums.get(role) or 0.0) for phase, role in ROLES.items()}


def by_device(curve: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The supernet's curve per device: one row per epoch and rank (``nas.oneshot.devices``), in order."""
    return [{"epoch": point.get("epoch"), **rank} for point in curve for rank in per_device(point)]


def summary(search: Search) -> dict[str, Any]:
    """The phase, the supernet's training (status, epochs, learning curve, per device too, digest), the ranking
    check and the seconds of evaluation per phase."""
    config = search.config["oneshot"]
    stored = (search.stats or {}).get("oneshot") or {}
    row = supernet(search)
    phase = stored.get("phase", "supernet")
    scored = Individual.objects.filter(search=search, role=Individual.Role.SEARCH,
                                       status__in=Individual.FINAL).count()
    check_rows = list(checks(search).values_list("status", flat=True))
    repeats = config.get("check_repeats", 1)  # a search configured before repeats existed: one
    return {
        "phase": phase, "phase_label": PHASES.get(phase, phase), "status": search.status,
        "supernet": {"epochs": config["supernet"]["epochs"], "status": row.status if row else "waiting",
                     "curve": (row.curve or []) if row else [], "digest": (row.metrics or {}).get("digest") if row
                     else None, "accuracy": row.fitness if row else None, "node": row.node if row else "",
                     "duration": row.duration if row else None,
                     "devices": (row.metrics or {}).get("devices") or row.device if row else "",
                     "per_device": by_device(row.curve or []) if row else []},
        "paths": {"scored": scored, "planned": search.evaluations_total},
        "check": {"paths": config["check_ranking"], "repeats": repeats, "planned": config["check_ranking"] * repeats,
                  "done": sum(s in Individual.FINAL for s in check_rows)},  # planned and done: trainings
        "ranking": ranking(search), "seconds": phase_seconds(search),
    }
