"""Figures of a search, built with plotly from plain data (points as ``broadcast.individual_event`` makes them,
``accounting.summary`` dicts, learning curves): data in, figure dict out, no browser.

The live page draws these with plotly.js and grows them in place from websocket events; it finds a trace by
its ``name`` (one per node for the per-node charts), so the names here are the contract with
``static/js/search_live.js``. Times are epoch milliseconds on date axes. Many-point traces are WebGL
(``scattergl``) so 10,000 individuals stay responsive.
"""
from __future__ import annotations

import functools
import html
import json
from collections import defaultdict
from typing import Any

import plotly.graph_objects as go

FAILED = "failed"
EFFICIENCY_COLOUR = "#8c5a00"
#: The note an empty chart shows instead of its axes.
NO_RESULTS = "No results yet"
#: The notes of charts that wait for more than any result.
NO_SUCCESS = "No successful result yet"
SPEEDUP_WAITS = "Speedup waits for the first result"
#: A date axis spans at least this much either side of its points (one result alone is not a 1 ms window).
TIME_PAD_MS = 30_000.0
#: Fitness is a validation accuracy (``evaluators.result``): its axis stays within [0, 1] while every value does
#: (its autorange clipped to this, a little room either side so a marker at 0 or 1 is drawn whole).
UNIT_RANGE = (0.0, 1.0)
UNIT_CLIP = (-0.03, 1.03)
#: The efficiency axis: 0-100% (``accounting.figures`` keeps it there), a little room for the line at 100%.
EFFICIENCY_RANGE = (0.0, 1.02)
BEST = "best so far"
#: The fitness chart's trace of a search's final runs (``final``): not the search's, never its best so far.
FINAL_RUNS = "final runs"
#: The fitness chart's trace of each role that is not the strategy's (none of them is the search's best so far).
ROLE_TRACES = {"final": FINAL_RUNS, "supernet": "supernet", "check": "ranking check (stand-alone)"}
#: The timeline's trace of evaluations under way (each bar ends at "now"; the page stretches them every second).
RUNNING = "running"
LAYOUT = {"margin": {"l": 55, "r": 15, "t": 40, "b": 45}, "height": 320, "template": "plotly_white",
          "legend": {"orientation": "h", "y": -0.2}, "uirevision": "keep"}


def node_label(point: dict[str, Any]) -> str:
    return f"{point.get('node') or '-'}/{point.get('device') or '-'}"


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000.0


def hover(point: dict[str, Any]) -> str:
    held = f" on {point['devices']}" if point.get("devices") else ""  # a gang's devices (evalworker --gang)
    why = ""
    if point.get("allocation"):  # why the allocator gave it those devices, and its plan's expected finish
        finish = point.get("allocation_finish")
        why = f"<br>{html.escape(str(point['allocation']))}" + (f" (plan done ~{finish} s after)" if finish else "")
    return f"#{point['number']} {point.get('description') or ''}{held}{why}"


#: A trace's per-point arrays. Plotly checks an array value by value (about 0.1 s per 10,000 on this CPU, most
#: of a 10,000-individual snapshot's time), so ``_trace`` validates everything else and attaches these after.
ARRAYS = ("x", "y", "text", "customdata")


@functools.lru_cache(maxsize=512)
def _validated(kind: type, props_json: str) -> dict[str, Any]:
    """``kind(**props).to_plotly_json()`` for the JSON of ``props``, once per distinct value: validating a layout
    expands its template (most of a snapshot's plotly time), and a search's figures repeat the same few
    layouts and trace styles. The result is shared: read it, never change it."""
    return kind(**json.loads(props_json)).to_plotly_json()


def _checked(kind: type, props: dict[str, Any]) -> dict[str, Any]:
    return _validated(kind, json.dumps(props, sort_keys=True))


def _trace(kind: type, **props: Any) -> dict[str, Any]:
    """``kind(**props)`` as plotly's JSON dict: every property name and scalar validated by plotly, the arrays
    (plain lists of numbers, strings or ``None``) attached as they are."""
    arrays = {name: props.pop(name) for name in ARRAYS if name in props}
    return {**_checked(kind, props), **arrays}


def _figure(traces: list[dict[str, Any]], title: str, note: str = NO_RESULTS, **layout: Any) -> dict[str, Any]:
    xs = [x for trace in traces for x in trace.get("x") or () if x is not None]
    if not xs:
        layout = _empty(layout, note)
    elif (layout.get("xaxis") or {}).get("type") == "date":
        layout = {**layout, "xaxis": _time_window(layout["xaxis"], xs)}
    return {"data": traces, "layout": _checked(go.Layout, {**LAYOUT, "title": {"text": title, "font": {"size": 15}},
                                                            **layout})}


def _time_window(axis: dict[str, Any], xs: list[float]) -> dict[str, Any]:
    """A date axis that autoranges over its points and :data:`TIME_PAD_MS` either side of them (points drawn
    live later still widen it)."""
    return {**axis, "autorangeoptions": {"include": [min(xs) - TIME_PAD_MS, max(xs) + TIME_PAD_MS]}}


def _unit_axis(axis: dict[str, Any], values: list[float | None]) -> dict[str, Any]:
    """A fitness axis clipped to [0, 1] while every value is an accuracy; any other value widens it."""
    if all(UNIT_RANGE[0] <= v <= UNIT_RANGE[1] for v in values if v is not None):
        return {**axis, "autorangeoptions": {"clipmin": UNIT_CLIP[0], "clipmax": UNIT_CLIP[1]}}
    return axis


def _empty(layout: dict[str, Any], text: str = NO_RESULTS) -> dict[str, Any]:
    """A chart before its first point: its axes hidden (an empty date axis spans the year 2000) behind a note.
    ``meta.empty`` names the hidden axes, which the live page shows again when the first point arrives."""
    axes = sorted({"xaxis", "yaxis", *(key for key in layout if key.startswith(("xaxis", "yaxis")))})
    note = {"text": text, "showarrow": False, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5,
            "font": {"size": 14, "color": "#5b6475"}}
    return {**layout, **{axis: {**layout.get(axis, {}), "visible": False} for axis in axes},
            "annotations": [note], "meta": {"empty": axes}}


def final(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in points if p.get("status") in ("done", "pruned", "failed") and p.get("finished") is not None]


def fitness_scatter(points: list[dict[str, Any]]) -> dict[str, Any]:
    """Fitness of every final individual over time, one trace per node; failures on their own trace at 0, final
    runs on theirs."""
    by_node: dict[str, list] = defaultdict(list)
    for point in final(points):
        name = ROLE_TRACES.get(point.get("role") or "search") or node_label(point)
        by_node[FAILED if point["fitness"] is None else name].append(point)
    traces = [
        _trace(
            go.Scattergl, name=name, mode="markers", x=[ms(p["finished"]) for p in rows],
            y=[0.0 if p["fitness"] is None else p["fitness"] for p in rows], text=[hover(p) for p in rows],
            customdata=[p["number"] for p in rows],
            hovertemplate="%{text}<br>fitness %{y:.4f}<extra>%{fullData.name}</extra>",
            marker={"symbol": "x", "color": "#c23b32"} if name == FAILED
            else {"symbol": "diamond", "size": 10} if name == FINAL_RUNS else {"size": 7},
        )
        for name, rows in sorted(by_node.items())
    ]
    values = [y for trace in traces for y in trace["y"]]
    return _figure(traces, "Fitness of every individual", xaxis={"type": "date", "title": {"text": "finished"}},
                   yaxis=_unit_axis({"title": {"text": "fitness"}}, values))


def best_so_far(points: list[dict[str, Any]]) -> dict[str, Any]:
    """The best fitness found up to each successful result (a step line that reaches the latest result)."""
    xs, ys, best = [], [], None
    for point in sorted(final(points), key=lambda p: p["finished"]):
        # a partial value is no result; a final run is not the search's
        searched = point.get("role", "search") == "search"
        if point["fitness"] is not None and point.get("status") != "pruned" and searched:
            best = point["fitness"] if best is None else max(best, point["fitness"])
            xs.append(ms(point["finished"]))
            ys.append(best)
    trace = _trace(go.Scattergl, name=BEST, mode="lines+markers", x=xs, y=ys, line={"shape": "hv", "width": 3},
                   marker={"size": 6})
    note = NO_SUCCESS if final(points) else NO_RESULTS
    return _figure([trace], "Best so far", note, xaxis={"type": "date"},
                   yaxis=_unit_axis({"title": {"text": "fitness"}}, ys))


def node_bars(summary: dict[str, Any]) -> dict[str, Any]:
    """Per node: evaluations done (left axis) and throughput in evaluations per hour (right axis)."""
    nodes = summary.get("nodes") or []
    names = [f"{n['node']}/{n['device']}" for n in nodes]
    traces = [
        _trace(go.Bar, name="evaluations", x=names, y=[n["count"] for n in nodes], offsetgroup="count"),
        _trace(go.Bar, name="throughput / h", x=names,
               y=[None if n["throughput_per_hour"] is None else round(n["throughput_per_hour"], 1) for n in nodes],
               yaxis="y2", offsetgroup="rate"),
    ]
    return _figure(traces, "Per node: evaluations and throughput", barmode="group",
                   yaxis={"title": {"text": "evaluations"}},
                   yaxis2={"title": {"text": "per hour"}, "overlaying": "y", "side": "right", "showgrid": False})


def throughput_over_time(points: list[dict[str, Any]], start: float | None) -> dict[str, Any]:
    """Per node, evaluations per hour since the search's first dispatch, after each of its results."""
    traces = []
    by_node: dict[str, list] = defaultdict(list)
    for point in sorted(final(points), key=lambda p: p["finished"]):
        by_node[node_label(point)].append(point)
    for name, rows in sorted(by_node.items()):
        first = start if start is not None else rows[0]["finished"]
        ys = [3600.0 * (i + 1) / max(p["finished"] - first, 1e-3) for i, p in enumerate(rows)]
        traces.append(_trace(go.Scattergl, name=name, mode="lines+markers", x=[ms(p["finished"]) for p in rows], y=ys,
                             marker={"size": 5}))
    return _figure(traces, "Throughput per node over time", xaxis={"type": "date"},
                   yaxis={"title": {"text": "evaluations / hour"}, "rangemode": "tozero"})


def speedup(history: list[dict[str, Any]]) -> dict[str, Any]:
    """Measured speedup against the ideal (``held``: the slots the search could use on average while it ran, idle
    ones or those working for it, not those busy with another search) on the left axis, and the efficiency
    (speedup / ideal) on the right axis in percent, all from ``accounting.figures`` (the page's line reads the
    same). The right axis spans 0-100%, so an efficiency of 39% sits low on the chart and never looks like the
    ideal line; points before the figures are defined (no result yet) are left out."""
    history = [h for h in history if h.get("speedup") is not None]
    xs = [ms(h["time"]) for h in history]
    traces = [
        _trace(go.Scatter, name="speedup", mode="lines+markers", x=xs, y=[h["speedup"] for h in history],
               line={"width": 3}, marker={"size": 5}),
        _trace(go.Scatter, name="ideal", mode="lines+markers", x=xs, y=[h["held"] for h in history],
               line={"dash": "dash"}, marker={"size": 4}, hovertemplate="slots it could use %{y:.2f}<extra></extra>"),
        _trace(go.Scatter, name="efficiency", mode="lines+markers", x=xs,
               y=[h["efficiency"] for h in history], yaxis="y2", marker={"size": 4},
               line={"dash": "dot", "color": EFFICIENCY_COLOUR}, hovertemplate="efficiency %{y:.0%}<extra></extra>"),
    ]
    return _figure(traces, "Speedup while running vs the slots it could use", SPEEDUP_WAITS, xaxis={"type": "date"},
                   yaxis={"title": {"text": "speedup (× one slot); ideal dashed"}, "rangemode": "tozero"},
                   yaxis2={"title": {"text": "efficiency, % of ideal (dotted)", "font": {"color": EFFICIENCY_COLOUR}},
                           "overlaying": "y", "side": "right", "tickformat": ".0%", "showgrid": False,
                           "tickmode": "linear", "tick0": 0, "dtick": 0.25, "range": list(EFFICIENCY_RANGE),
                           "autorange": False, "tickfont": {"color": EFFICIENCY_COLOUR}})


def gantt_segment(point: dict[str, Any]) -> tuple[list, list, list]:
    """x, y and text of one evaluation's bar on the timeline (a thick line, then a gap)."""
    start = point.get("started") or point["finished"] - (point.get("duration") or 0.0)
    slot = point.get("slot") or node_label(point)
    return [ms(start), ms(point["finished"]), None], [slot, slot, None], [hover(point)] * 2 + [None]


def gantt(points: list[dict[str, Any]], running: list[dict[str, Any]] = (), now: float | None = None) -> dict[str, Any]:
    """Each worker slot's evaluations as bars along time, one trace per node; the ``running`` ones (started,
    no result yet) in one more trace, their bars ending at ``now``."""
    by_node: dict[str, list] = defaultdict(lambda: [[], [], []])
    for point in sorted(final(points), key=lambda p: p["finished"]):
        xs, ys, texts = by_node[node_label(point)]
        x, y, text = gantt_segment(point)
        xs.extend(x), ys.extend(y), texts.extend(text)
    traces = [_trace(go.Scattergl, name=name, mode="lines", x=xs, y=ys, text=texts, line={"width": 12},
                           hovertemplate="%{text}<extra>%{fullData.name}</extra>", connectgaps=False)
              for name, (xs, ys, texts) in sorted(by_node.items())]
    xs, ys, texts = [], [], []
    for point in running:
        if point.get("started") is not None and now is not None:
            x, y, text = gantt_segment({**point, "finished": max(now, point["started"])})
            xs.extend(x), ys.extend(y), texts.extend([f"{text[0]} (running)"] * 2 + [None])
    traces.append(_trace(go.Scattergl, name=RUNNING, mode="lines", x=xs, y=ys, text=texts, connectgaps=False,
                               line={"width": 12, "color": "rgba(230, 145, 30, 0.75)"},
                               hovertemplate="%{text}<extra>running</extra>"))
    return _figure(traces, "Per-worker timeline", xaxis={"type": "date"},
                   yaxis={"type": "category", "automargin": True})


def pareto_front(points: list[dict[str, Any]], objectives: list[list[str]]) -> list[dict[str, Any]]:
    """The non-dominated points over the first two objectives."""
    (a, da), (b, db) = objectives[:2]
    sign = {"max": 1.0, "min": -1.0}

    def key(p):
        return sign.get(da, 1.0) * p[a], sign.get(db, 1.0) * p[b]

    front, best_b = [], None
    for point in sorted(points, key=lambda p: (-key(p)[0], -key(p)[1])):
        if best_b is None or key(point)[1] > best_b:
            front.append(point)
            best_b = key(point)[1]
    return front


def pareto(points: list[dict[str, Any]], objectives: list[list[str]]) -> dict[str, Any] | None:
    """All successful individuals over the first two objectives, the Pareto front joined; ``None`` when the
    search has a single objective."""
    if len(objectives) < 2:
        return None
    (a, _), (b, _) = objectives[:2]
    front = sorted(pareto_front(points, objectives), key=lambda p: p[a])
    traces = [
        _trace(go.Scatter, name="individuals", mode="markers", x=[p[a] for p in points], y=[p[b] for p in points],
                   text=[hover(p) for p in points], customdata=[p["number"] for p in points], opacity=0.5),
        _trace(go.Scatter, name="Pareto front", mode="lines+markers", x=[p[a] for p in front], y=[p[b] for p in front],
                   text=[hover(p) for p in front], customdata=[p["number"] for p in front], line={"shape": "hv"}),
    ]
    return _figure(traces, "Pareto front", xaxis={"title": {"text": a}}, yaxis={"title": {"text": b}})


def learning_curve(curve: list[dict[str, Any]]) -> dict[str, Any]:
    """Losses and validation accuracy per epoch (whatever numeric series the evaluator recorded)."""
    names = [k for k in (curve[0] if curve else {}) if k != "epoch"]
    epochs = [row.get("epoch", i + 1) for i, row in enumerate(curve)]
    traces = [_trace(go.Scatter, name=name, mode="lines+markers", x=epochs, y=[row.get(name) for row in curve],
                         yaxis="y2" if "acc" in name else "y") for name in names]
    return _figure(traces, "Learning curve", xaxis={"title": {"text": "epoch"}},
                   yaxis={"title": {"text": "loss"}},
                   yaxis2=_unit_axis({"title": {"text": "accuracy"}, "overlaying": "y", "side": "right",
                                      "showgrid": False},
                                     [row.get(name) for name in names if "acc" in name for row in curve]))


def search_figures(points: list[dict[str, Any]], summary: dict[str, Any], history: list[dict[str, float]],
                   start: float | None, pareto_points: list[dict[str, Any]], objectives: list[list[str]],
                   running: list[dict[str, Any]] = (), now: float | None = None) -> dict:
    """Every figure of the live search page, by the id of the element that shows it."""
    figures = {
        "fitness": fitness_scatter(points), "best": best_so_far(points), "nodes": node_bars(summary),
        "throughput": throughput_over_time(points, start), "speedup": speedup(history),
        "gantt": gantt(points, running, now),
    }
    front = pareto(pareto_points, objectives)
    if front is not None:
        figures["pareto"] = front
    return figures
