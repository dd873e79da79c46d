"""The compare page's figures, from ``webapp.services.comparison.comparison``'s data: best so far against
evaluations and against running time, one trace per search on shared axes, and the Pareto fronts of the
searches that have one, overlaid (one chart per pair of objectives). Each search keeps its colour in every chart.

Plain ``scatter`` traces: a best-so-far line keeps only the points where the best improves, and a front is a
few points, so no chart here needs WebGL (nor the ``'unsafe-eval'`` that WebGL needs, ``webapp.dashboard.csp``).
"""
from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from webapp.dashboard.charts import _figure, _trace, _unit_axis, pareto_front

#: One colour per search, in the order chosen (plotly's default sequence).
COLOURS = ("#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3")
NO_BEST = "No successful result yet in these searches"
#: Running time is drawn in the largest unit that the longest search spends at least two of.
UNITS = ((3600.0, "hours"), (60.0, "minutes"), (1.0, "seconds"))


def colour(index: int) -> str:
    return COLOURS[index % len(COLOURS)]


def time_unit(longest: float) -> tuple[float, str]:
    """The unit (seconds per unit, its name) running times up to ``longest`` seconds are drawn in."""
    return next(((size, name) for size, name in UNITS if longest >= 2 * size), UNITS[-1])


def _best_trace(index: int, search: dict[str, Any], xs: list[float]) -> dict[str, Any]:
    return _trace(go.Scatter, name=search["label"], mode="lines+markers", x=xs, y=search["curve"]["best"],
                  line={"shape": "hv", "width": 3, "color": colour(index)}, marker={"size": 6},
                  hovertemplate="%{y:.4f} at %{x}<extra>%{fullData.name}</extra>")


def best_by_evaluations(searches: list[dict[str, Any]]) -> dict[str, Any]:
    traces = [_best_trace(i, s, s["curve"]["evaluations"]) for i, s in enumerate(searches)]
    values = [y for s in searches for y in s["curve"]["best"]]
    return _figure(traces, "Best so far against evaluations", NO_BEST,
                   xaxis={"title": {"text": "evaluations (with a result, failed ones included)"}, "rangemode": "tozero"},
                   yaxis=_unit_axis({"title": {"text": "best fitness"}}, values))


def best_by_time(searches: list[dict[str, Any]]) -> dict[str, Any]:
    longest = max((t for s in searches for t in s["curve"]["seconds"]), default=0.0)
    size, unit = time_unit(longest)
    traces = [_best_trace(i, s, [t / size for t in s["curve"]["seconds"]]) for i, s in enumerate(searches)]
    values = [y for s in searches for y in s["curve"]["best"]]
    return _figure(traces, "Best so far against running time", NO_BEST,
                   xaxis={"title": {"text": f"running time, {unit} (pauses left out)"}, "rangemode": "tozero"},
                   yaxis=_unit_axis({"title": {"text": "best fitness"}}, values))


def pareto_overlays(searches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One chart per pair of objectives that some searches share, each of those searches' fronts on it."""
    pairs: dict[tuple, list[tuple[int, dict[str, Any]]]] = {}
    for index, search in enumerate(searches):
        if search.get("pareto"):
            pair = tuple(tuple(objective) for objective in search["pareto"]["objectives"])
            pairs.setdefault(pair, []).append((index, search))
    figures = []
    for pair, members in pairs.items():
        (a, _), (b, _) = pair
        traces = []
        for index, search in members:
            front = sorted(pareto_front(search["pareto"]["points"], [list(o) for o in pair]), key=lambda p: p[a]) \
                if search["pareto"]["points"] else []
            traces.append(_trace(go.Scatter, name=search["label"], mode="lines+markers", x=[p[a] for p in front],
                                 y=[p[b] for p in front], text=[f"#{p['number']} {p.get('description') or ''}"
                                                                for p in front],
                                 line={"shape": "hv", "color": colour(index)}, marker={"size": 7},
                                 hovertemplate="%{text}<br>" + a + " %{x}<br>" + b + " %{y}<extra>%{fullData.name}</extra>"))
        figures.append(_figure(traces, f"Pareto fronts: {a} ({pair[0][1]}) and {b} ({pair[1][1]})",
                               "No successful result yet", xaxis={"title": {"text": a}}, yaxis={"title": {"text": b}}))
    return figures


def comparison_figures(data: dict[str, Any]) -> dict[str, Any]:
    """Every figure of the compare page: ``best_evaluations``, ``best_time`` and the list ``pareto``."""
    searches = data["searches"]
    return {"best_evaluations": best_by_evaluations(searches), "best_time": best_by_time(searches),
            "pareto": pareto_overlays(searches)}
