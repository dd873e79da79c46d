"""How long a search's budget will take, from what this installation measured: the seconds per epoch of its
recent trained evaluations (by search space and dataset) and the evaluation slots live now (by pool). The
create form shows the estimate as the budget changes (``static/js/search_form.js`` does the arithmetic)."""
from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from webapp.messaging import transport
from webapp.searches.models import Individual

#: How many recent successful evaluations the estimate reads.
RECENT = 500


def seconds_per_epoch() -> dict[str, dict[str, float]]:
    """``"space/dataset" -> {"seconds": median seconds per epoch, "count": evaluations}`` over the last
    :data:`RECENT` successful trained evaluations (a slot's whole evaluation time, data and export included)."""
    rows = (Individual.objects.filter(status=Individual.Status.DONE, duration__gt=0)
            .order_by("-finished")
            .values_list("duration", "metrics__epochs", "search__config__space__name", "search__config__dataset",
                         "search__config__evaluation__mode")[:RECENT])
    samples: dict[str, list[float]] = defaultdict(list)
    for duration, epochs, space, dataset, mode in rows:
        if mode == "train" and isinstance(epochs, (int, float)) and epochs > 0:
            samples[f"{space}/{dataset}"].append(duration / epochs)
    return {key: {"seconds": statistics.median(values), "count": len(values)} for key, values in samples.items()}


def live_slots_by_pool() -> dict[str, int]:
    """The live evaluation slots of each pool (``{}`` when Redis cannot be asked)."""
    try:
        slots = transport.live_slots()
    except Exception:
        return {}
    counts: dict[str, int] = defaultdict(int)
    for slot in slots:
        counts[slot.get("pool", "eval")] += 1
    return dict(counts)


def measured() -> dict[str, Any]:
    """What the form's estimate needs."""
    return {"per_epoch": seconds_per_epoch(), "slots": live_slots_by_pool()}
