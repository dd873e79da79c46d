"""A one-shot search's page (seed 003): the architecture search's page (its table, charts, final training)
with the one-shot panel above it: the phase, the supernet's learning curve, the paths scored, and the ranking
check's Kendall tau with its interval and scatter plot; the panel reloads as the search advances. The ranking
check's data is a download of its own (CSV)."""
from __future__ import annotations

import csv
import io
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from webapp.dashboard.access import owned_search
from webapp.dashboard.pages import architecture_context
from nas.oneshot import describe_check
from webapp.searches import oneshot_state
from webapp.searches.models import Search

PANEL = "dashboard/_oneshot.html"
#: The scatter plot's size and margin, in SVG units.
WIDTH, HEIGHT, MARGIN = 360, 240, 36


def detail(request: HttpRequest, search: Search) -> HttpResponse:
    """The live page; a draft opens in its form."""
    if search.status == Search.Status.DRAFT:
        return redirect("search-edit", search_id=search.pk)
    return render(request, "dashboard/search_detail.html", {**architecture_context(request, search),
                                                             "oneshot": panel_context(search)})


@login_required
def panel(request: HttpRequest, search_id: int) -> HttpResponse:
    """The one-shot panel as an HTML fragment (the page reloads it as the search advances)."""
    search = owned_search(request, search_id)
    return render(request, PANEL, {"search": search, "oneshot": panel_context(search)})


def panel_context(search: Search) -> dict[str, Any]:
    state = oneshot_state.summary(search)
    ranking = state["ranking"]
    return {**state, "scatter": scatter(ranking["points"]) if ranking else None}


def scatter(points: list[dict[str, Any]]) -> dict[str, Any]:
    """The ranking check's points placed on an SVG plot: supernet score (x) against stand-alone accuracy (y),
    each axis spanning its own range."""
    usable = [p for p in points if p.get("supernet") is not None and p.get("standalone") is not None]
    if not usable:
        return {"dots": [], "width": WIDTH, "height": HEIGHT}
    xs, ys = [p["supernet"] for p in usable], [p["standalone"] for p in usable]

    def scale(value: float, low: float, high: float, size: int) -> float:
        return MARGIN + (value - low) / ((high - low) or 1.0) * (size - 2 * MARGIN)

    dots = [{"x": round(scale(p["supernet"], min(xs), max(xs), WIDTH), 1),
             "y": round(HEIGHT - scale(p["standalone"], min(ys), max(ys), HEIGHT), 1),
             "label": f"#{p['number']}: supernet {p['supernet']:.4f}, stand-alone {p['standalone']:.4f}"}
            for p in usable]
    return {"dots": dots, "width": WIDTH, "height": HEIGHT, "x_low": min(xs), "x_high": max(xs), "y_low": min(ys),
            "y_high": max(ys), "bottom": HEIGHT - MARGIN, "right": WIDTH - MARGIN, "margin": MARGIN}


@login_required
def ranking_csv(request: HttpRequest, search_id: int) -> HttpResponse:
    """The ranking check's paths: number, key, status, supernet score, stand-alone accuracy; then tau."""
    search = owned_search(request, search_id)
    ranking = oneshot_state.ranking(search) or {"points": []}
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["number", "key", "status", "supernet_score", "standalone_accuracy"])
    for point in ranking["points"]:
        writer.writerow([point["number"], point["key"], point["status"], point.get("supernet"),
                         point.get("standalone")])
    if ranking.get("n") is not None:
        writer.writerow([])
        writer.writerow(["# kendall_tau", ranking.get("tau"), "low", ranking.get("low"), "high", ranking.get("high"),
                         "n", ranking.get("n")])
        writer.writerow(["# against", ranking.get("against") or describe_check("accuracy", "accuracy", 1)])
        noise = ranking.get("reference_noise")
        if noise:
            writer.writerow(["# reference_noise_tau", noise["tau"], "low", noise["low"], "high", noise["high"], "n",
                             noise["n"], "ceiling", noise["ceiling"]])
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="search-{search.pk}-ranking-check.csv"'
    return response
