"""The JSON API: list, detail, snapshot, events, individuals with pagination, create, actions; bad input 400."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest
from django.urls import reverse

from nas.spaces import space_from_config
from nas.strategies.base import Candidate
from tests.dashboard.conftest import CONFIG
from webapp.control import recording
from webapp.messaging import messages
from webapp.searches.models import Search

pytestmark = pytest.mark.django_db


def test_list_and_detail(owner_client, search):
    listing = owner_client.get(reverse("api-searches")).json()
    assert listing["count"] == 1 and listing["results"][0]["name"] == "mine"
    detail = owner_client.get(reverse("api-search", args=[search.pk])).json()
    assert detail["done"] == 10 and detail["config"]["space"]["name"] == "chain"
    assert {n["node"] for n in detail["summary"]["nodes"]} == {"alpha", "beta"}


def test_individuals_are_paginated_and_sorted(owner_client, search):
    url = reverse("api-individuals", args=[search.pk])
    page = owner_client.get(url, {"per_page": 4, "page": 2, "sort": "-fitness"}).json()
    assert page["total"] == 10 and page["pages"] == 3 and page["page"] == 2
    fitness = [row["fitness"] for row in page["rows"]]
    assert fitness == sorted(fitness, reverse=True) and len(fitness) == 4
    assert owner_client.get(url, {"per_page": 0}).status_code == 400
    assert "sort" in owner_client.get(url, {"sort": "nope"}).json()["error"]


def test_snapshot_and_events_share_the_sequence(owner_client, search):
    snapshot = owner_client.get(reverse("api-snapshot", args=[search.pk])).json()
    assert snapshot["seq"] == search.event_seq == 10
    assert sorted(snapshot["plotted"]) == list(range(10))
    points = sum(len(trace["x"]) for trace in snapshot["figures"]["fitness"]["data"])
    assert points == 10
    events = owner_client.get(reverse("api-events", args=[search.pk]), {"after": 7}).json()["events"]
    assert [e["seq"] for e in events] == [8, 9, 10]
    assert owner_client.get(reverse("api-events", args=[search.pk]), {"after": "x"}).status_code == 400


def test_create_with_json(owner_client):
    url = reverse("api-searches")
    response = owner_client.post(url, json.dumps({"name": "scripted", "config": CONFIG}), content_type="application/json")
    assert response.status_code == 201 and response.json()["status"] == "draft"
    bad = owner_client.post(url, json.dumps({"name": "x", "config": {**CONFIG, "dataset": "imagenet"}}),
                            content_type="application/json")
    assert bad.status_code == 400 and bad.json()["field"] == "dataset"
    assert owner_client.post(url, "{not json", content_type="application/json").status_code == 400
    assert owner_client.post(url, "[1]", content_type="application/json").status_code == 400
    assert Search.objects.count() == 1


def test_actions_answer_409_when_they_do_not_apply(owner_client, search):
    stop = owner_client.post(reverse("api-action", args=[search.pk, "stop"]))
    assert stop.status_code == 200 and stop.json()["status"] == "stopped"
    again = owner_client.post(reverse("api-action", args=[search.pk, "stop"]))
    assert again.status_code == 409 and "Only a running search" in again.json()["error"]
    assert owner_client.post(reverse("api-action", args=[search.pk, "resume"])).json()["status"] == "running"
    clone = owner_client.post(reverse("api-action", args=[search.pk, "clone"]))
    assert clone.status_code == 201 and clone.json()["cloned_from"] == search.pk
    assert owner_client.post(reverse("api-action", args=[search.pk, "explode"])).status_code == 404


def test_pareto_front_of_a_multi_objective_search(owner_client, users):
    from tests.dashboard.conftest import fill
    from webapp.services import lifecycle

    config = {**CONFIG, "strategy": {"name": "nsga2", "seed": 1, "params": {"population": 4, "generations": 3}}}
    search = fill(lifecycle.create_search(users["owner"], "two objectives", config), 8)
    figure = owner_client.get(reverse("api-pareto", args=[search.pk])).json()
    names = [trace["name"] for trace in figure["data"]]
    assert names == ["individuals", "Pareto front"] and len(figure["data"][0]["x"]) == 8
    assert figure["layout"]["xaxis"]["title"]["text"] == "accuracy"
    html = owner_client.get(reverse("search-detail", args=[search.pk])).content.decode()
    assert 'id="chart-pareto"' in html
    snapshot = owner_client.get(reverse("api-snapshot", args=[search.pk])).json()
    assert "pareto" in snapshot["figures"]


def test_single_objective_search_has_no_pareto(owner_client, search):
    assert owner_client.get(reverse("api-pareto", args=[search.pk])).status_code == 404


def test_bad_list_page_is_a_400(owner_client, search):
    assert owner_client.get(reverse("api-searches"), {"page": "x"}).status_code == 400
    assert owner_client.get(reverse("api-searches"), {"page": "9"}).status_code == 400


def test_snapshot_carries_the_evaluations_under_way(owner_client, search):
    """The timeline shows what runs now, not only what has finished: the snapshot lists the running
    individuals and its timeline has their bars up to the server's clock."""
    space = space_from_config(search.config["space"])
    genome = space.sample(np.random.default_rng(99))
    (individual,) = recording.create_individuals(
        search, space, [Candidate(id=10, genome=genome, key=space.key(genome), generation=3)])
    started = time.time() - 3
    origin = messages.Origin(search=search.pk, individual=individual.pk, number=10, task_id="t", node="gamma",
                             device="cpu", slot="gamma/cpu/1")
    assert recording.mark_started(individual, messages.Started(origin, attempt=1, time=started))
    snapshot = owner_client.get(reverse("api-snapshot", args=[search.pk])).json()
    assert [p["number"] for p in snapshot["running"]] == [10] and snapshot["now"] >= started + 3
    bars = next(t for t in snapshot["figures"]["gantt"]["data"] if t["name"] == "running")
    assert bars["y"][:2] == ["gamma/cpu/1"] * 2 and bars["x"][0] == pytest.approx(started * 1000)
    assert 10 not in snapshot["plotted"]


@pytest.mark.parametrize("name", ["api-snapshot", "api-events", "download-csv", "download-events"])
def test_big_reads_are_gzipped_for_clients_that_ask(owner_client, search, name):
    import gzip

    plain = owner_client.get(reverse(name, args=[search.pk]))
    packed = owner_client.get(reverse(name, args=[search.pk]), HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert "Content-Encoding" not in plain and packed["Content-Encoding"] == "gzip"
    assert len(packed.content) < len(plain.content)
    body = gzip.decompress(packed.content)
    if name == "api-snapshot":  # the snapshot's figures carry a time ("now"): compare what does not move
        assert json.loads(body)["plotted"] == plain.json()["plotted"]
    else:
        assert body == plain.content


def test_a_draft_is_edited_through_the_api_and_only_a_draft(owner_client, users):
    from webapp.services import lifecycle

    draft = lifecycle.create_search(users["owner"], "api draft", {"training": {"epochs": 2}})
    url = reverse("api-search", args=[draft.pk])
    changed = owner_client.patch(url, {"name": "renamed", "config": {"training": {"epochs": 1}}},
                                 content_type="application/json")
    assert changed.status_code == 200 and changed.json()["name"] == "renamed"
    assert changed.json()["config"]["training"]["epochs"] == 1
    bad = owner_client.patch(url, {"config": {"training": {"epochs": 0}}}, content_type="application/json")
    assert bad.status_code == 400 and bad.json()["field"] == "training.epochs"
    draft.refresh_from_db()
    assert draft.config["training"]["epochs"] == 1 and draft.name == "renamed"  # the bad edit changed nothing
    lifecycle.launch(draft)
    refused = owner_client.patch(url, {"name": "too late"}, content_type="application/json")
    assert refused.status_code == 409 and "clone it" in refused.json()["error"]


@pytest.mark.parametrize("config, field", [
    ({"space": {"name": "chain", "max_layers": 1_000_000}}, "space"),
    ({"strategy": {"params": {"population": 10**9}}}, "strategy.params.population"),
    ({"strategy": {"params": {"max_evaluations": 10**12}}}, "strategy.params.max_evaluations"),
    ({"strategy": {"seed": 2**70}}, "strategy.seed"),
    ({"pool": "control"}, "pool"),
])
def test_a_configuration_that_would_jam_the_control_plane_is_refused(owner_client, config, field):
    """The requests that once jammed the control plane (a million layers, a billion individuals, seeds of
    2^70, evaluations run inside the control worker) are 400s naming the field, and nothing is saved."""
    response = owner_client.post(reverse("api-searches"), {"name": "jam", "config": config, "launch": True},
                                 content_type="application/json")
    assert response.status_code == 400 and response.json()["field"] == field
    assert not Search.objects.filter(name="jam").exists()
