"""The page and JSON of a weight search (seed 001): its generations as figures. Thin views over the stored
``WeightGeneration`` rows; no torch (the web process never loads it).

The page and the JSON carry the same snapshot: the figures, the progress, and the sequence number of the last
event they include. The page then follows the search's websocket (``static/js/weights_live.js``) from that
number; the JSON is its fallback after a ``resync``, and the API."""
from __future__ import annotations

import csv
import io
import json
import zipfile
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from webapp.dashboard.access import owned_search
from webapp.dashboard.weights_charts import weight_figures
from webapp.searches.kinds import kind_of
from webapp.searches.models import Search, WeightGeneration, WeightState
from webapp.searches.weights_config import KIND
from webapp.services import node_control

FIELDS = ("number", "best", "mean", "worst", "validation_accuracy", "workers", "evaluated", "traffic", "timings")


def generations(search: Search) -> list[dict[str, Any]]:
    return list(WeightGeneration.objects.filter(search=search).order_by("number").values(*FIELDS))


def summary(search: Search, rows: list[dict[str, Any]]) -> dict[str, Any]:
    state = WeightState.objects.filter(search=search).only("generation", "validation_accuracy").first()
    return {"status": search.status, "reason": search.status_reason, "generation": state.generation if state else 0,
            "generations": search.config["weights"]["generations"],
            "validation_accuracy": state.validation_accuracy if state else None,
            "last": rows[-1] if rows else None}


def snapshot(search: Search) -> dict[str, Any]:
    """What the page starts from: ``seq``, the figures and the progress, in the JSON shape of ``api-weights``."""
    # The sequence number first: a generation recorded after it arrives as an event (the page skips a row it
    # already has), whereas reading it after the rows could skip an event whose row the snapshot lacks.
    seq = Search.objects.filter(pk=search.pk).values_list("event_seq", flat=True).get()
    rows = generations(search)
    return {"seq": seq, "summary": summary(search, rows), "figures": weight_figures(rows)}


def detail(request: HttpRequest, search: Search) -> HttpResponse:
    """The page of a weight search (drafts too, with a button to their form)."""
    return render(request, "dashboard/weights_detail.html", {
        "search": search, "snapshot": snapshot(search), "config_json": json.dumps(search.config, indent=2),
        "workers_idle": node_control.idle_reason(search.config.get("pool", "eval"))
        if search.status == Search.Status.RUNNING else "",
    })


@login_required
def figures(request: HttpRequest, search_id: int) -> JsonResponse:
    """The snapshot of a weight search: its figures, progress and event sequence number (the page's resync)."""
    search = owned_search(request, search_id)
    if kind_of(search.config) is not KIND:
        return JsonResponse({"error": f"search {search_id} is not a weight search"}, status=400)
    return JsonResponse(snapshot(search))


@login_required
def weights_zip(request: HttpRequest, search_id: int) -> HttpResponse:
    """``weights.pt`` and ``model.py`` of the weights as the last generation left them (stored bytes only)."""
    search = owned_search(request, search_id)
    state = WeightState.objects.filter(search=search).first()
    if state is None or not state.weights_pt:
        raise Http404("This search has no weights yet: no generation has finished.")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("weights.pt", bytes(state.weights_pt))
        archive.writestr("model.py", state.source)
        archive.writestr("config.json", json.dumps({**search.config, "generation": state.generation,
                                                    "validation_accuracy": state.validation_accuracy}, indent=2))
    response = HttpResponse(out.getvalue(), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="search-{search.pk}-weights.zip"'
    return response


def generations_csv(search: Search) -> HttpResponse:
    """A weight search's log: one row per generation (its statistics, bytes and time split)."""
    out = io.StringIO()
    writer = csv.writer(out)
    traffic_keys = ["bytes_up", "bytes_down", "bytes", "fetched", "model_bytes", "weights_bytes"]
    timing_keys = ["evaluate", "gather", "gradient", "update", "total"]
    writer.writerow(["generation", "best", "mean", "worst", "validation_accuracy", "workers", "evaluated",
                     *traffic_keys, *(f"{key}_s" for key in timing_keys)])
    for row in generations(search):
        writer.writerow([row["number"], row["best"], row["mean"], row["worst"], row["validation_accuracy"],
                         row["workers"], json.dumps(row["evaluated"], sort_keys=True),
                         *(row["traffic"].get(key) for key in traffic_keys),
                         *(row["timings"].get(key) for key in timing_keys)])
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="search-{search.pk}-generations.csv"'
    return response
