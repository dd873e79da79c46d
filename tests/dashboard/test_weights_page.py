"""A weight search's page and figures (seed 001): per-generation fitness and accuracy, bytes, time split."""
from __future__ import annotations

import io
import json
import re
import zipfile

import pytest
from django.urls import reverse

from webapp.dashboard import weights_charts
from webapp.searches import broadcast
from webapp.searches.models import Search, WeightGeneration, WeightState
from webapp.services import lifecycle

pytestmark = pytest.mark.django_db
CONFIG = {"kind": "weights", "network": {"kind": "mlp", "layers": [64, 32, 10]}, "weights": {"generations": 5}}


def rows(count: int) -> list[dict]:
    return [{"number": g, "best": -0.5 + 0.1 * g, "mean": -1.0 + 0.1 * g, "worst": -2.0, "validation_accuracy":
             0.5 + 0.05 * g, "workers": 2, "evaluated": {"alpha": 32, "beta": 32},
             "traffic": {"bytes_up": 100, "bytes_down": 200, "bytes": 300, "model_bytes": 280, "weights_bytes": 6e5},
             "timings": {"evaluate": 0.2, "gather": 0.05, "gradient": 0.01, "update": 0.02, "total": 0.28}}
            for g in range(count)]


def test_figures_have_a_point_per_generation():
    figures = weights_charts.weight_figures(rows(3))
    fitness = figures["chart-weights-fitness"]["data"]
    assert [trace["name"] for trace in fitness] == ["best", "mean", "worst", "validation accuracy"]
    assert fitness[3]["y"] == [0.5, 0.55, 0.6] and fitness[3]["yaxis"] == "y2"
    traffic = {trace["name"]: trace["y"] for trace in figures["chart-weights-traffic"]["data"]}
    assert traffic["sent"] == [100] * 3 and traffic["population's weights"] == [6e5] * 3
    timings = figures["chart-weights-timings"]
    assert [trace["name"] for trace in timings["data"]] == list(weights_charts.PHASES)
    assert timings["layout"]["barmode"] == "stack"
    nodes = figures["chart-weights-nodes"]["data"][0]
    assert nodes["x"] == ["alpha", "beta"] and nodes["y"] == [96, 96]
    empty = weights_charts.weight_figures([])
    assert empty["chart-weights-fitness"]["layout"]["annotations"][0]["text"] == "No results yet"


def test_the_page_and_json_of_a_weight_search(owner_client, users, client):
    search = lifecycle.create_search(users["owner"], "es", CONFIG)
    for row in rows(2):
        WeightGeneration.objects.create(search=search, **row)
    zip_url = reverse("download-weights", args=[search.pk])
    assert owner_client.get(zip_url).status_code == 404  # no generation yet
    WeightState.objects.create(search=search, generation=2, digest="d", data=b"x", validation_accuracy=0.55,
                               weights_pt=b"tensors", source="# model")
    html = owner_client.get(reverse("search-detail", args=[search.pk])).content.decode()
    for element in ("chart-weights-fitness", "chart-weights-traffic", "chart-weights-timings", "chart-weights-nodes",
                    "launch-button", "stop-button", "resume-button", "clone-button", "weights-snapshot", "download-weights",
                    "edit-button", "live-state"):
        assert f'id="{element}"' in html
    assert "2/5" in html and "0.5500" in html
    body = json.loads(owner_client.get(reverse("api-weights", args=[search.pk])).content)
    assert body["summary"]["generation"] == 2 and len(body["figures"]["chart-weights-fitness"]["data"][0]["x"]) == 2
    with zipfile.ZipFile(io.BytesIO(owner_client.get(zip_url).content)) as archive:
        assert archive.read("weights.pt") == b"tensors" and archive.read("model.py") == b"# model"
        assert json.loads(archive.read("config.json"))["generation"] == 2
    client.force_login(users["other"])
    assert client.get(reverse("api-weights", args=[search.pk])).status_code == 404
    assert client.get(zip_url).status_code == 404


def test_the_page_and_json_carry_the_sequence_number_of_their_snapshot(owner_client, users):
    """The live page follows the websocket from the number of the last event its figures include."""
    search = lifecycle.create_search(users["owner"], "es", CONFIG)
    lifecycle.launch(search)  # a search.status event
    for row in rows(2):
        WeightGeneration.objects.create(search=search, **row)
        broadcast.notify(search.pk, "weights.generation", row)
    seq = Search.objects.values_list("event_seq", flat=True).get(pk=search.pk)
    assert seq == 3
    html = owner_client.get(reverse("search-detail", args=[search.pk])).content.decode()
    assert f'data-seq="{seq}"' in html
    page_snapshot = json.loads(re.search(r'id="weights-snapshot" type="application/json">(.*?)</script>',
                                         html).group(1))
    body = json.loads(owner_client.get(reverse("api-weights", args=[search.pk])).content)
    assert page_snapshot["seq"] == body["seq"] == seq
    assert body["summary"]["last"]["number"] == 1 and body["summary"]["status"] == "running"
    assert 'src="/static/js/live_socket.js"' in html  # the websocket, instead of polling the JSON


def test_each_trace_names_the_row_field_the_live_page_appends():
    """weights_live.js appends an event's row to a trace by the field its meta names: every field exists."""
    row = rows(1)[0]
    for figure in weights_charts.weight_figures(rows(2)).values():
        for trace in figure["data"]:
            meta = trace["meta"]
            path = meta.get("field") or meta["sum"]
            value = row
            for key in path.split("."):
                value = value[key]
            if "field" in meta:
                assert trace["y"][0] == value, path
            else:
                assert dict(zip(trace["x"], trace["y"])) == {node: 2 * count for node, count in value.items()}


def test_no_architecture_view_fails_on_a_weight_search(owner_client, users):
    """The views made for architecture searches answer a weight search without a 500."""
    owner_client.raise_request_exception = False
    search = lifecycle.create_search(users["owner"], "es", CONFIG)
    WeightGeneration.objects.create(search=search, **rows(1)[0])
    assert owner_client.get(reverse("search-edit", args=[search.pk])).status_code == 200  # its own form
    for name in ("search-list", "home"):
        assert owner_client.get(reverse(name)).status_code == 200
    for name in ("api-search", "api-snapshot", "api-events", "api-individuals", "download-best", "download-events",
                 "search-table"):
        assert owner_client.get(reverse(name, args=[search.pk])).status_code == 200, name
    generations = owner_client.get(reverse("download-csv", args=[search.pk]))
    lines = generations.content.decode().splitlines()
    assert generations.status_code == 200 and lines[0].startswith("generation,best,mean") and len(lines) == 2


FORM = {"name": "es", "network": "mlp", "layers": "64,32,10", "dataset": "digits", "algorithm": "openai_es",
        "method": "cu", "population": 16, "sigma": 0.05, "learning_rate": 0.03, "optimizer": "adam",
        "fitness": "loss", "batch_size": 128, "generations": 10, "mirrored": "on", "seed": 0, "pool": "eval",
        "draft": "1"}


@pytest.mark.parametrize("change, field, words", [
    ({"population": 15}, "population", "even with mirrored"),
    ({"sigma": 0}, "sigma", "greater than 0"),
    ({"layers": "64,8192,8192,10"}, "layers", "more than"),
    ({"layers": "64,x"}, "layers", "integers separated by commas"),
    ({"network": "best_of", "source_search": 999}, "source_search", "no architecture search #999"),
])
def test_the_weights_form_shows_the_field_error_and_saves_nothing(owner_client, change, field, words):
    response = owner_client.post(reverse("weights-create"), {**FORM, **change})
    html = response.content.decode()
    assert response.status_code == 400 and f'id="error-{field}"' in html and words in html
    assert not Search.objects.exists()


def test_the_weights_form_creates_a_draft(owner_client):
    assert owner_client.get(reverse("weights-create")).status_code == 200
    assert reverse("weights-create") in owner_client.get(reverse("search-list")).content.decode()
    response = owner_client.post(reverse("weights-create"), FORM)
    search = Search.objects.get()
    assert response.status_code == 302 and search.status == "draft" and search.config["kind"] == "weights"
    assert search.config["weights"]["population"] == 16 and search.config["network"]["layers"] == [64, 32, 10]
