"""Figures of a weight search (seed 001), one point per generation: fitness of the offspring and validation
accuracy, bytes moved against what sending the population's weights would cost, the time split, and offspring
per node. Data in (``WeightGeneration`` rows as dicts), plotly figure dicts out, no browser, no torch.

Each trace names the row field it plots in its ``meta`` (``{"field": "traffic.bytes_up"}``; the per-node bars
``{"sum": "evaluated"}``): the live page (``static/js/weights_live.js``) appends a ``weights.generation`` event's
row to the traces by these names, so which field each trace shows is said once, here."""
from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from webapp.dashboard.charts import _figure, _trace  # the same validated, cached trace and layout builders

PHASES = ("evaluate", "gather", "gradient", "update")


def fitness(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Best, mean and worst offspring fitness per generation; validation accuracy on the right axis."""
    xs = [row["number"] for row in rows]
    traces = [_trace(go.Scatter, name=name, mode="lines", x=xs, y=[row[name] for row in rows], meta={"field": name})
              for name in ("best", "mean", "worst")]
    traces.append(_trace(go.Scatter, name="validation accuracy", mode="lines+markers", yaxis="y2", x=xs,
                         y=[row["validation_accuracy"] for row in rows], line={"width": 3},
                         meta={"field": "validation_accuracy"}))
    return _figure(traces, "Fitness per generation", xaxis={"title": {"text": "generation"}},
                   yaxis={"title": {"text": "offspring fitness"}},
                   yaxis2={"title": {"text": "accuracy"}, "overlaying": "y", "side": "right", "showgrid": False,
                           "range": [0, 1]})


def traffic(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Bytes per generation: sent and received (measured), the model's count, and the population's weights."""
    xs = [row["number"] for row in rows]
    series = {"sent": "bytes_up", "received": "bytes_down", "model": "model_bytes", "population's weights":
              "weights_bytes"}
    traces = [_trace(go.Scatter, name=name, mode="lines", x=xs, y=[row["traffic"].get(key) for row in rows],
                     line={"dash": "dot"} if key == "weights_bytes" else {}, meta={"field": f"traffic.{key}"})
              for name, key in series.items()]
    return _figure(traces, "Bytes per generation", xaxis={"title": {"text": "generation"}},
                   yaxis={"title": {"text": "bytes"}, "type": "log"})


def timings(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Seconds per generation, stacked: evaluate, gather, gradient, update."""
    xs = [row["number"] for row in rows]
    traces = [_trace(go.Bar, name=phase, x=xs, y=[row["timings"].get(phase) for row in rows],
                     meta={"field": f"timings.{phase}"}) for phase in PHASES]
    return _figure(traces, "Time per generation", barmode="stack", xaxis={"title": {"text": "generation"}},
                   yaxis={"title": {"text": "seconds"}})


def offspring_per_node(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Offspring evaluated by each node over the whole search."""
    counts: dict[str, int] = {}
    for row in rows:
        for node, count in row["evaluated"].items():
            counts[node] = counts.get(node, 0) + count
    names = sorted(counts)
    trace = _trace(go.Bar, name="offspring", x=names, y=[counts[n] for n in names], meta={"sum": "evaluated"})
    return _figure([trace], "Offspring evaluated per node", yaxis={"title": {"text": "offspring"}})


def weight_figures(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every figure of the weight search's page, by the id of its chart."""
    return {"chart-weights-fitness": fitness(rows), "chart-weights-traffic": traffic(rows),
            "chart-weights-timings": timings(rows), "chart-weights-nodes": offspring_per_node(rows)}
