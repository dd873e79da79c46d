"""The final training on the pages: the form's two fields, the API's checks and report, the search page's panel."""
from __future__ import annotations

import json

import pytest
from django.urls import reverse

from nas.spaces import space_from_config
from nas.strategies import Candidate
from tests.dashboard.conftest import CONFIG, fill
from webapp.control import recording
from webapp.dashboard.architecture_form import DEFAULTS, SearchForm
from webapp.messaging import messages
from webapp.searches import final_runs
from webapp.searches.models import Individual, Search
from webapp.services import lifecycle

pytestmark = pytest.mark.django_db
FINAL = {**CONFIG, "final": {"top": 2, "epochs": 6}}


def test_the_form_sets_the_final_training_and_refuses_half_of_it_at_its_field(owner_client):
    good = SearchForm(data={**DEFAULTS, "name": "final", "final_top": "2", "final_epochs": "9"})
    assert good.is_valid(), good.errors
    assert good.config["final"] == {"top": 2, "epochs": 9}
    initial = SearchForm.initial_from("final", good.config)
    assert (initial["final_top"], initial["final_epochs"]) == (2, 9)
    plain = SearchForm(data={**DEFAULTS, "name": "none"})
    assert plain.is_valid() and "final" not in plain.config
    for data, field, words in (({"final_top": "2"}, "final_epochs", "a value is required"),
                               ({"final_top": "200", "final_epochs": "3"}, "final_top", "20"),
                               ({"final_top": "2", "final_epochs": "0"}, "final_epochs", "1")):
        response = owner_client.post(reverse("search-create"), {**DEFAULTS, "name": "bad", **data})
        html = response.content.decode()
        assert response.status_code == 400 and f'id="error-{field}"' in html and words in html, data
    assert Search.objects.count() == 0


def test_the_api_checks_final_and_reports_the_final_runs(owner_client, users):
    url = reverse("api-searches")
    bad = owner_client.post(url, json.dumps({"name": "x", "config": {**CONFIG, "final": {"top": 13, "epochs": 2}}}),
                            content_type="application/json")
    assert bad.status_code == 400 and bad.json()["field"] == "final.top"
    assert "at most 12" in bad.json()["error"]
    search = _with_final_runs(users)
    final = owner_client.get(reverse("api-search", args=[search.pk])).json()["final"]
    assert (final["top"], final["epochs"], final["state"]) == (2, 6, "done")
    assert [run["number"] for run in final["runs"]] == [10, 11]
    assert final["best"]["number"] == 11 and final["best"]["fitness"] == 0.97
    plain = lifecycle.create_search(users["owner"], "plain", CONFIG)
    assert "final" not in owner_client.get(reverse("api-search", args=[plain.pk])).json()


def test_the_search_page_shows_the_final_training_and_its_result(owner_client, users):
    search = _with_final_runs(users)
    html = owner_client.get(reverse("search-detail", args=[search.pk])).content.decode()
    assert 'id="final-panel"' in html and "Final training" in html and 'data-final="' in html
    panel = owner_client.get(reverse("search-final", args=[search.pk])).content.decode()
    assert 'id="final-runs"' in panel and 'id="final-result"' in panel and "0.9700" in panel
    plain = fill(lifecycle.create_search(users["owner"], "plain", CONFIG), 3)
    assert 'id="final-panel"' not in owner_client.get(reverse("search-detail", args=[plain.pk])).content.decode()


def _with_final_runs(users) -> Search:
    """A search of 10 individuals whose two best were retrained as final runs (0.95 and 0.97), as the loop would."""
    search = fill(lifecycle.create_search(users["owner"], "final", FINAL), 10)
    space = space_from_config(search.config["space"])
    genomes = final_runs.top_genomes(search, 2)
    runs = recording.create_individuals(search, space, [
        Candidate(id=10 + i, genome=g, key=space.key(g), generation=0, parents=(space.key(g),), operator="final")
        for i, g in enumerate(genomes)], role=Individual.Role.FINAL)
    for run, fitness in zip(runs, (0.95, 0.97)):
        message = messages.parse({
            "type": "result", "search": search.pk, "individual": run.pk, "number": run.number, "task_id": "t",
            "node": "alpha", "device": "cpu", "slot": "alpha/cpu/0", "attempt": 1, "started": 1.0, "finished": 2.0,
            "duration": 1.0, "packet_bytes": 0,
            "result": {"status": "ok", "fitness": fitness, "metrics": {"accuracy": fitness}, "timings": {}}})
        recording.record_result(search, run, message, nbytes=100)
    search.refresh_from_db()
    assert search.evaluations_done == 10  # final runs are not the search's evaluations
    return search


def test_the_charts_show_final_runs_on_their_own_trace_and_not_as_the_searchs_best(users):
    from webapp.dashboard import charts
    from webapp.services import queries

    search = _with_final_runs(users)
    points = queries.final_points(search)
    traces = {trace["name"]: trace for trace in charts.fitness_scatter(points)["data"]}
    assert sorted(traces[charts.FINAL_RUNS]["y"]) == [0.95, 0.97]
    assert max(charts.best_so_far(points)["data"][0]["y"]) == search.best_fitness == 0.59


def test_a_final_runs_page_counts_its_epochs_against_the_final_budget(owner_client, users):
    search = _with_final_runs(users)
    run = final_runs.runs(search).last()
    run.epochs_trained = 6.0
    run.save(update_fields=["epochs_trained"])
    html = owner_client.get(reverse("individual-detail", args=[search.pk, run.number])).content.decode()
    assert "6.00 of 6 (a final run)" in html
