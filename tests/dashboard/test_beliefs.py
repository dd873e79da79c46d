"""The beliefs panel: what reinforce's policy and tpe's densities look like as figures, how the loop keeps them
beside the strategy's state, and where the page, the snapshot and the API show them."""
from __future__ import annotations

import json

import pytest

from nas.spaces import space_from_config
from nas.strategies import get_strategy
from nas.testing.strategies import evaluate
from webapp.control import strategy_store
from webapp.dashboard import live
from webapp.dashboard.beliefs_chart import GOOD, BAD, beliefs_figure, favourites, policy_heatmap
from webapp.searches import beliefs
from webapp.searches.models import Search
from webapp.services import lifecycle

pytestmark = pytest.mark.django_db


def explorer_search(owner, name: str, results: int = 12, batches: int = 3) -> Search:
    """A search of ``name`` whose strategy was told ``results`` results, its state and beliefs saved after
    each of ``batches`` batches as the loop saves them."""
    config = {"space": {"name": "chain", "max_layers": 3},
              "strategy": {"name": name, "seed": 1, "params": {"max_evaluations": 40}},
              "evaluation": {"mode": "simulated", "duration": 0.1}}
    search = lifecycle.create_search(owner, name, config)
    search.status = Search.Status.RUNNING
    strategy = get_strategy(name, space_from_config(search.config["space"]), 1, **search.config["strategy"]["params"])
    for _ in range(batches):
        for candidate in strategy.ask(results // batches):
            strategy.tell(candidate.id, evaluate(candidate, fail_every=0))
        strategy_store.save(search, strategy)
        strategy_store.save_beliefs(search, strategy)
        search.save()
    return Search.objects.get(pk=search.pk)


def test_the_policy_is_a_heatmap_of_every_choice_over_time(users):
    search = explorer_search(users["owner"], "reinforce")
    kept = beliefs.kept_for(search.pk)
    assert [point["told"] for point in kept["history"]] == [4, 8, 12]
    figure = json.loads(json.dumps(policy_heatmap(kept)))
    (trace,) = figure["data"]
    assert trace["type"] == "heatmap" and trace["x"] == [4, 8, 12]
    latest = kept["latest"]["decisions"]
    assert trace["y"][:4] == ["n_layers = 1", "n_layers = 2", "n_layers = 3", "l1_kernel = 3"]
    assert len(trace["y"]) == sum(len(d["choices"]) for d in latest) == 3 + 3 * (2 + 4)
    assert [row[-1] for row in trace["z"][:3]] == latest[0]["probabilities"]
    assert all(len(row) == 3 for row in trace["z"])
    assert "baseline" in figure["layout"]["title"]["text"]


def test_tpe_shows_each_decisions_favourite_under_both_densities(users):
    search = explorer_search(users["owner"], "tpe", results=15)
    latest = beliefs.kept_for(search.pk)["latest"]
    assert latest["modelled"] and beliefs.kept_for(search.pk)["history"] == []  # charted now, not over time
    figure = json.loads(json.dumps(favourites({"latest": latest})))
    good, bad = figure["data"]
    assert (good["name"], bad["name"]) == (GOOD, BAD) and good["orientation"] == "h"
    first = latest["decisions"][0]
    pick = first["good"].index(max(first["good"]))
    assert good["y"][0] == first["name"] and good["x"][0] == first["good"][pick]
    assert good["text"][0] == f"= {first['choices'][pick]}"
    assert "15 results" in figure["layout"]["title"]["text"]


def test_before_any_belief_the_panel_is_an_empty_chart_with_a_note():
    for kind, kept in (("policy", None), ("densities", None), ("densities", {"latest": {"modelled": False}})):
        figure = beliefs_figure(kept, kind)
        assert figure["layout"]["annotations"][0]["text"] == "No results yet"


def test_the_kept_history_stays_bounded_and_spans_the_search():
    kept = None
    for told in range(1, 201):
        kept = beliefs.recorded(kept, {"kind": "policy", "told": told,
                                       "decisions": [{"name": "g", "choices": [0, 1], "probabilities": [0.5, 0.5]}]})
    history = [point["told"] for point in kept["history"]]
    assert len(history) <= beliefs.MAX_HISTORY and history[0] == 1 and history[-1] == 200
    assert history == sorted(history)


def test_the_beliefs_are_kept_beside_the_state_and_never_reach_the_strategy(users):
    search = explorer_search(users["owner"], "reinforce")
    assert set(search.strategy_state[beliefs.KEY]) == {"latest", "history"}
    strategy = strategy_store.load(search, space_from_config(search.config["space"]))
    strategy_store.save(search, strategy)  # a save after loading keeps them
    assert search.strategy_state[beliefs.KEY]["history"]


def test_the_page_snapshot_and_api_show_the_panel_of_an_explorer_only(owner_client, users, search):
    explorer = explorer_search(users["owner"], "reinforce")
    page = owner_client.get(f"/searches/{explorer.pk}/").content.decode()
    assert 'id="chart-beliefs"' in page and f"/api/searches/{explorer.pk}/beliefs/" in page
    assert live.snapshot(explorer)["figures"]["beliefs"]["data"][0]["type"] == "heatmap"
    response = owner_client.get(f"/api/searches/{explorer.pk}/beliefs/")
    assert response.status_code == 200 and response.json()["data"][0]["type"] == "heatmap"
    assert 'id="chart-beliefs"' not in owner_client.get(f"/searches/{search.pk}/").content.decode()
    assert "beliefs" not in live.snapshot(search)["figures"]
    missing = owner_client.get(f"/api/searches/{search.pk}/beliefs/")
    assert missing.status_code == 404 and "reinforce and tpe" in missing.json()["error"]


def test_another_users_beliefs_are_not_found(client, users):
    explorer = explorer_search(users["owner"], "tpe")
    client.force_login(users["other"])
    assert client.get(f"/api/searches/{explorer.pk}/beliefs/").status_code == 404
