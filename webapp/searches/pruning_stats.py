"""What early stopping saved in a search, from its stats (``search.stats["pruning"]``, written by the control
loop's ``webapp.control.pruning``): read by the page, the API and ``search watch``."""
from __future__ import annotations

from typing import Any


def saved_epochs(stats: dict[str, Any] | None) -> dict[str, Any] | None:
    """``{"trained", "budget", "saved", "share", "pruned", "false_stop_rate", "audited", "coverage",
    "coverage_stated", "coverage_intervals"}``; ``None`` when the search prunes nothing (no pruner, or no result
    yet). ``coverage``: how often the intervals the pruner stated (``curve``) held the final of the candidates
    that completed, against the ``coverage_stated`` level (``None`` before any, or for a pruner without intervals)."""
    pruning = (stats or {}).get("pruning")
    if not pruning:
        return None
    budget = pruning["epochs_budget"]
    saved = budget - pruning["epochs_trained"]
    audit = pruning.get("audit") or {}
    coverage = audit.get("coverage") or {}
    return {"trained": pruning["epochs_trained"], "budget": budget, "saved": saved,
            "share": saved / budget if budget else 0.0, "pruned": pruning["pruned"],
            "false_stop_rate": audit.get("rate"), "audited": audit.get("finished", 0),
            "coverage": coverage.get("rate"), "coverage_stated": coverage.get("stated"),
            "coverage_intervals": coverage.get("intervals", 0)}


def describe(stats: dict[str, Any] | None) -> str:
    """One line for people: ``"pruned 14: 251 of 300 epochs trained (16% saved); false stops 1/9"``."""
    saved = saved_epochs(stats)
    if saved is None:
        return ""
    text = (f"pruned {saved['pruned']}: {saved['trained']:.0f} of {saved['budget']:.0f} epochs trained "
            f"({100 * saved['share']:.0f}% saved)")
    if saved["audited"]:
        text += f"; false stops {100 * (saved['false_stop_rate'] or 0):.0f}% of {saved['audited']} audited"
    if saved["coverage"] is not None:
        text += (f"; observed coverage {100 * saved['coverage']:.0f}% of stated {100 * saved['coverage_stated']:.0f}% "
                 f"({saved['coverage_intervals']} intervals)")
    return text
