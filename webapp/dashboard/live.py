"""The snapshot a live search page starts from: the search, its figures and the sequence number of the last
event they include. The page then applies the websocket's events with a higher number."""
from __future__ import annotations

import time
from typing import Any

from webapp.dashboard import charts
from webapp.dashboard.beliefs_chart import search_beliefs
from webapp.dashboard.curve_chart import search_curves
from webapp.searches import accounting, data_notices
from webapp.searches.pruning_stats import saved_epochs
from webapp.services import queries
from webapp.searches.models import Search


def snapshot(search: Search) -> dict[str, Any]:
    # Read the sequence number first: whatever happens after it arrives as an event, and applying an event
    # for an individual already in the snapshot changes nothing (the page keys points by number).
    seq = Search.objects.filter(pk=search.pk).values_list("event_seq", flat=True).get()
    search = Search.objects.select_related("owner").defer("strategy_state").get(pk=search.pk)
    points = queries.final_points(search)
    summary = accounting.summary(search.stats)
    start = (search.stats or {}).get("first_dispatch")
    objectives = queries.objectives_of(search)
    running, now = queries.running_points(search), time.time()
    figures = charts.search_figures(points, summary, queries.speedup_history(search, points), start,
                                    queries.pareto_points(search), objectives, running, now)
    figures["curves"] = search_curves(search)
    panel = search_beliefs(search)
    if panel is not None:
        figures["beliefs"] = panel
    return {
        "seq": seq, "search": queries.search_row(search), "data_unreadable": data_notices.notices(search.stats),
        "summary": summary, "figures": figures,
        "plotted": [p["number"] for p in points], "start": start, "objectives": objectives,
        "best": max((p["fitness"] for p in points if p["fitness"] is not None), default=None),
        "node_counts": _node_counts(points), "running": running, "now": now,
        "pruning": saved_epochs(search.stats),
    }


def _node_counts(points: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for point in points:
        label = charts.node_label(point)
        counts[label] = counts.get(label, 0) + 1
    return counts
