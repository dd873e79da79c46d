"""The search page's beliefs panel: where the strategy believes good candidates are, drawn from what the loop
keeps of its beliefs (``webapp.searches.beliefs``); data in, figure dict out, no browser.

- ``policy`` (reinforce): a heatmap of each decision's probability per choice (a row per choice) after each
  batch of results (a column per batch): where the policy's mass goes as it learns;
- ``densities`` (tpe): per decision, the choice TPE's good density ``l(x)`` favours and the one its bad density
  ``g(x)`` favours, each bar as long as that choice's probability, the choice written on it.

The page draws it from the snapshot, then fetches it again (``/api/searches/<id>/beliefs/``) as results come.
"""
from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from nas.strategies import STRATEGIES
from webapp.dashboard.charts import _figure, _trace
from webapp.searches import beliefs
from webapp.searches.models import Search

GOOD, BAD = "good l(x)", "bad g(x)"
COLOURS = {GOOD: "#2f7d4f", BAD: "#c23b32"}
#: Pixels per row (a heatmap's choice, a decision's pair of bars): a chain of 8 layers has 56 choices.
ROW = 11


def beliefs_kind(search: Search) -> str | None:
    """What the search's strategy's beliefs are (``Strategy.BELIEFS``), ``None`` for a strategy that shows none."""
    strategy = STRATEGIES.get(((search.config or {}).get("strategy") or {}).get("name"))
    return strategy.BELIEFS if strategy is not None else None


def search_beliefs(search: Search) -> dict[str, Any] | None:
    """The panel of a search's strategy as last kept by its loop; ``None`` for a strategy that shows none."""
    kind = beliefs_kind(search)
    return None if kind is None else beliefs_figure(beliefs.kept_for(search.pk), kind)


def beliefs_figure(kept: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    """The panel for a strategy whose beliefs are of ``kind`` (``Strategy.BELIEFS``), from its kept beliefs."""
    return policy_heatmap(kept) if kind == "policy" else favourites(kept)


def policy_heatmap(kept: dict[str, Any] | None) -> dict[str, Any]:
    latest, history = (kept or {}).get("latest"), (kept or {}).get("history") or []
    title = "Policy: each choice's probability as it learns"
    if not latest or not history:
        return _figure([], title)
    rows = [f"{d['name']} = {choice}" for d in latest["decisions"] for choice in d["choices"]]
    z = [[point["values"][i][j] for point in history]
         for i, d in enumerate(latest["decisions"]) for j in range(len(d["choices"]))]
    trace = _trace(go.Heatmap, name="policy", x=[point["told"] for point in history], y=rows, zmin=0, zmax=1,
                   colorscale="Blues", colorbar={"title": {"text": "p"}, "thickness": 12},
                   hovertemplate="%{y}<br>after %{x} results: p = %{z:.3f}<extra></extra>")
    trace["z"] = z  # attached as is, like the other arrays (plotly would check it value by value)
    return _figure([trace], f"{title} (baseline {_number(latest.get('baseline'))})",
                   height=max(320, 110 + ROW * len(rows)), xaxis={"title": {"text": "results told"}},
                   yaxis={"autorange": "reversed", "automargin": True, "tickfont": {"size": 9}})


def favourites(kept: dict[str, Any] | None) -> dict[str, Any]:
    latest = (kept or {}).get("latest") or {}
    decisions = latest.get("decisions") or []
    if not latest.get("modelled"):
        return _figure([], "TPE: densities once its random start is over")
    traces = []
    for label, field in ((GOOD, "good"), (BAD, "bad")):
        picks = [max(range(len(d[field])), key=d[field].__getitem__) for d in decisions]
        traces.append(_trace(
            go.Bar, name=label, orientation="h", marker={"color": COLOURS[label]}, textposition="outside",
            textfont={"size": 10}, cliponaxis=False,
            x=[d[field][i] for d, i in zip(decisions, picks)], y=[d["name"] for d in decisions],
            text=[f"= {d['choices'][i]}" for d, i in zip(decisions, picks)],
            hovertemplate="%{y}: %{text} (p = %{x:.2f})<extra>%{fullData.name}</extra>",
        ))
    title = (f"TPE after {latest['told']} results: each decision's favourite under the good ({latest['good']} "
             f"trials) and bad ({latest['bad']}) densities")
    return _figure(traces, title, barmode="group", height=max(320, 110 + 2 * ROW * len(decisions)),
                   xaxis={"title": {"text": "probability of the favourite choice"}, "range": [0, 1.08]},
                   yaxis={"autorange": "reversed", "automargin": True, "tickfont": {"size": 9}})


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"
