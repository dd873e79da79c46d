"""The search page's learning-curves chart: every individual's validation accuracy against epochs, the running
ones growing as ``individual.progress`` events arrive, the pruned ones in red, and for each pruned one the
pruner's prediction dashed from its last point to the end of the budget, with its 90% interval.

One trace per individual, named ``#<number>`` (its prediction ``#<number> predicted``): the names are the
contract with ``static/js/search_curves.js``, which extends a trace by name and restyles it when the individual
ends. Only the latest :data:`SHOWN` individuals are drawn (plus the running ones), so a big search stays light.
"""
from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from webapp.dashboard.charts import UNIT_CLIP, _figure, _trace
from webapp.searches.broadcast import CURVE_METRIC
from webapp.searches.models import Individual, Search

SHOWN = 200
#: The panel before any individual reported a point of its curve (a failed one reports none).
NO_CURVES = "No learning curve yet"
#: An individual's page while it waits to run or runs before its first epoch's report.
CURVE_WAITS = "No learning curve yet: it waits for the first epoch's validation report."
Z90 = 1.6448536269514722
STYLES = {
    "running": {"color": "rgba(230, 145, 30, 0.9)", "width": 2},
    "done": {"color": "rgba(60, 110, 180, 0.55)", "width": 1.5},
    "pruned": {"color": "rgba(194, 59, 50, 0.75)", "width": 1.5},
    "failed": {"color": "rgba(120, 120, 120, 0.4)", "width": 1},
}
METRIC = CURVE_METRIC


def curve_rows(search: Search) -> list[dict[str, Any]]:
    """The latest individuals with a curve: number, status, curve, the pruner's decision."""
    rows = (Individual.objects.filter(search=search).exclude(curve=[])
            .order_by("-number").values("number", "status", "curve", "prune")[:SHOWN])
    return list(reversed(list(rows)))


def prediction_trace(number: int, last: tuple[float, float], prune: dict[str, Any], max_epochs: float) -> dict | None:
    """The dashed prediction of a pruned individual: from its last point to (budget, predicted), with its stated
    interval (``low``/``high`` when the pruner gave them, as ``curve`` does; else +- 1.645 spread)."""
    predicted, spread = prune.get("predicted"), prune.get("spread")
    if predicted is None:
        return None
    error = {"type": "data", "array": [0, Z90 * (spread or 0.0)], "visible": True, "color": STYLES["pruned"]["color"]}
    if prune.get("low") is not None and prune.get("high") is not None:
        error = {**error, "symmetric": False, "array": [0, max(prune["high"] - predicted, 0.0)],
                 "arrayminus": [0, max(predicted - prune["low"], 0.0)]}
    return _trace(go.Scatter, name=f"#{number} predicted", mode="lines+markers", x=[last[0], max_epochs],
                  y=[last[1], predicted], showlegend=False, error_y=error,
                  line={"dash": "dash", **STYLES["pruned"]}, marker={"size": 4},
                  hovertemplate=f"#{number}: {prune.get('reason', '')}<extra>predicted</extra>")


def learning_curves(rows: list[dict[str, Any]], max_epochs: float) -> dict[str, Any]:
    """The figure for ``rows`` as :func:`curve_rows` gives them."""
    traces = []
    for row in rows:
        points = [(p.get("epoch"), p.get(METRIC)) for p in row["curve"] if p.get(METRIC) is not None]
        if not points:
            continue
        status = row["status"] if row["status"] in STYLES else "running"
        # markers too: a curve of one epoch is one point, which a line alone does not draw
        traces.append(_trace(go.Scatter, name=f"#{row['number']}", mode="lines+markers", x=[x for x, _ in points],
                             y=[y for _, y in points], showlegend=False, line=STYLES[status],
                             marker={"size": 5, "color": STYLES[status]["color"]},
                             hovertemplate=f"#{row['number']} ({status})<br>epoch %{{x}}: %{{y:.4f}}<extra></extra>"))
        prune = row.get("prune") or {}
        if status == "pruned" and prune.get("stop"):
            predicted = prediction_trace(row["number"], points[-1], prune, max_epochs)
            if predicted is not None:
                traces.append(predicted)
    return _figure(traces, "Learning curves (orange: running, blue: done, red: pruned, dashed: predicted)", NO_CURVES,
                   xaxis={"title": {"text": "epoch"}, "range": [0, max_epochs * 1.02]},
                   yaxis={"title": {"text": "validation accuracy"},
                          "autorangeoptions": {"clipmin": UNIT_CLIP[0], "clipmax": UNIT_CLIP[1]}})


def search_curves(search: Search) -> dict[str, Any]:
    return learning_curves(curve_rows(search), float(search.config.get("training", {}).get("epochs", 1)))


def individual_curve(individual: Individual, max_epochs: float) -> dict[str, Any] | None:
    """The individual page's learning curve, with the pruner's dashed prediction when it was pruned."""
    from webapp.dashboard.charts import learning_curve

    if not individual.curve:
        return None
    figure = learning_curve(individual.curve)
    prune = individual.prune or {}
    points = [(p.get("epoch"), p.get(METRIC)) for p in individual.curve if p.get(METRIC) is not None]
    if individual.status == "pruned" and prune.get("stop") and points:
        predicted = prediction_trace(individual.number, points[-1], prune, max_epochs)
        if predicted is not None:
            figure = {**figure, "data": [*figure["data"], {**predicted, "yaxis": "y2", "showlegend": True,
                                                           "name": "predicted (90% interval)"}]}
    return figure
