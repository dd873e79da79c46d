"""Comparing searches: the service (ids, access, best-so-far curves, configurations, the CSV), the figures, and
the views' answers to a bad choice (a 4xx with a message, nothing changed)."""
from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from tests.dashboard.conftest import CONFIG, fill
from webapp.dashboard import compare_charts
from webapp.searches.models import Individual, Search
from webapp.services import comparison, lifecycle

pytestmark = pytest.mark.django_db

MULTI = {**CONFIG, "strategy": {"name": "nsga2", "seed": 1, "params": {
    "population": 4, "max_evaluations": 12, "objectives": [["fitness", "max"], ["params", "min"]]}}}


@pytest.fixture
def second(users):
    config = {**CONFIG, "training": {"epochs": 3}}
    return fill(lifecycle.create_search(users["owner"], "second", config), 6)


def test_ids_come_as_a_comma_list_or_repeated_each_once():
    assert comparison.parse_ids(["3,1"]) == [3, 1]
    assert comparison.parse_ids(["3", "1", "3"]) == [3, 1]
    assert comparison.parse_ids(["1, 2,,4"]) == [1, 2, 4]


@pytest.mark.parametrize("ids, words", [([], "got 0"), (["5"], "got 1"), (["5,5"], "got 1"),
                                        (["1,2,3,4,5,6,7"], "got 7"), (["1,x"], "'x'"), (["1,-2"], "'-2'")])
def test_bad_ids_are_refused_with_a_message(ids, words):
    with pytest.raises(comparison.ComparisonError) as raised:
        comparison.parse_ids(ids)
    assert words in str(raised.value) and raised.value.status == 400


def test_another_users_search_reads_as_unknown_but_staff_see_it(users, search, second):
    theirs = lifecycle.create_search(users["other"], "theirs", CONFIG)
    with pytest.raises(comparison.ComparisonError) as raised:
        comparison.chosen(users["owner"], [search.pk, theirs.pk])
    assert raised.value.status == 404 and f"#{theirs.pk}" in str(raised.value)
    assert [s.pk for s in comparison.chosen(users["staff"], [theirs.pk, search.pk])] == [theirs.pk, search.pk]


def test_best_curve_keeps_improvements_and_the_last_evaluation(search):
    curve = comparison.best_curve(search)
    final = Individual.objects.filter(search=search, status__in=Individual.FINAL).count()
    assert curve["best"] == sorted(curve["best"])  # never worse
    assert curve["evaluations"][-1] == final and curve["best"][-1] == pytest.approx(search.best_fitness)
    assert curve["seconds"] == sorted(curve["seconds"]) and curve["seconds"][0] >= 0
    # the fixture's results improve one by one, but #3 failed: no point for it, yet it counts as an evaluation
    assert 4 not in curve["evaluations"] and 5 in curve["evaluations"]


def test_a_search_without_results_has_an_empty_curve(users):
    draft = lifecycle.create_search(users["owner"], "empty", CONFIG)
    assert comparison.best_curve(draft) == {"evaluations": [], "seconds": [], "best": []}


def test_configurations_side_by_side_differences_first(search, second):
    rows = comparison.config_rows([search, second])
    first = rows[0]
    assert first["field"] == "training.epochs" and first["differs"] and first["values"] == ["2", "3"]
    assert not any(row["differs"] for row in rows[1:])
    assert {"field": "space.name", "values": ["chain", "chain"], "differs": False} in rows


def test_table_reads_the_accounting(search, second):
    row = comparison.figures_row(search)
    assert row["done"] == 10 and row["failed"] == 1 and row["best"] == pytest.approx(0.59)
    assert row["device_hours"] == pytest.approx(10 * 4.0 / 3600)
    from webapp.searches import accounting
    assert row["speedup"] == accounting.summary(search.stats)["speedup"]


def test_one_csv_of_all_with_a_search_column(search, second):
    out = io.StringIO()
    from webapp.dashboard.compare_views import _log
    count = comparison.comparison_csv([search, second], _log, out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert count == len(rows) == 16
    assert list(rows[0])[:4] == ["search", "search_name", "number", "state"]
    assert [r["search"] for r in rows] == [str(search.pk)] * 10 + [str(second.pk)] * 6


def test_figures_share_axes_and_colours(users, search, second):
    multi = fill(lifecycle.create_search(users["owner"], "multi", MULTI), 5)
    figures = compare_charts.comparison_figures(comparison.comparison([search, second, multi]))
    names = [trace["name"] for trace in figures["best_evaluations"]["data"]]
    assert names == [f"#{search.pk} mine", f"#{second.pk} second", f"#{multi.pk} multi"]
    assert [t["line"]["color"] for t in figures["best_time"]["data"]] == list(compare_charts.COLOURS[:3])
    assert all(t["type"] == "scatter" for t in figures["best_time"]["data"])  # no WebGL, no unsafe-eval
    assert len(figures["pareto"]) == 1 and figures["pareto"][0]["data"][0]["name"] == f"#{multi.pk} multi"
    assert figures["pareto"][0]["data"][0]["x"]  # its front has points


def test_time_axis_unit_follows_the_longest_search():
    assert compare_charts.time_unit(30) == (1.0, "seconds")
    assert compare_charts.time_unit(600) == (60.0, "minutes")
    assert compare_charts.time_unit(4 * 3600) == (3600.0, "hours")


# --- views ------------------------------------------------------------------------------------------------------

def _state():
    return list(Search.objects.order_by("pk").values_list("pk", "status", "event_seq", "evaluations_done"))


def test_compare_page_csv_and_json(owner_client, search, second):
    ids = f"{search.pk},{second.pk}"
    html = owner_client.get(reverse("compare"), {"ids": ids}).content.decode()
    for element in ("chart-best-evaluations", "chart-best-time", "compare-table", "compare-config", "compare-csv",
                    "compare-data"):
        assert f'id="{element}"' in html
    assert 'class="differs"' in html and "//cdn" not in html.lower()
    data = owner_client.get(reverse("api-compare"), {"ids": ids}).json()
    assert [row["id"] for row in data["rows"]] == [search.pk, second.pk] and data["live"] is True
    response = owner_client.get(reverse("compare-csv"), {"ids": [str(search.pk), str(second.pk)]})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert response.content.decode().startswith("search,search_name,number")


@pytest.mark.parametrize("name", ["compare", "compare-csv", "api-compare"])
def test_bad_choices_are_4xx_with_a_message_and_change_nothing(owner_client, users, search, second, name):
    theirs = lifecycle.create_search(users["other"], "theirs", CONFIG)
    before = _state()
    cases = [({"ids": str(search.pk)}, 400, "Choose 2 to 6"),
             ({"ids": ",".join(str(i) for i in range(1, 8))}, 400, "got 7"),
             ({"ids": f"{search.pk},<b>"}, 400, "search numbers"),
             ({"ids": f"{search.pk},99999"}, 404, "No search #99999"),
             ({"ids": f"{search.pk},{theirs.pk}"}, 404, f"No search #{theirs.pk}")]
    for params, status, words in cases:
        response = owner_client.get(reverse(name), params)
        assert response.status_code == status, params
        body = response.json()["error"] if name == "api-compare" else response.content.decode()
        assert words in body
        if name != "api-compare":
            assert response["Content-Type"].startswith("text/plain")  # never HTML: it may quote the query
    assert _state() == before


def test_staff_compare_anyones_searches(client, users, search):
    theirs = lifecycle.create_search(users["other"], "theirs", CONFIG)
    client.force_login(users["staff"])
    assert client.get(reverse("compare"), {"ids": f"{search.pk},{theirs.pk}"}).status_code == 200


def test_compare_needs_a_sign_in(client, search, second):
    ids = f"{search.pk},{second.pk}"
    assert client.get(reverse("compare"), {"ids": ids}).status_code == 302
    assert client.get(reverse("api-compare"), {"ids": ids}).status_code == 401


def test_an_architecture_search_beside_a_weight_search(owner_client, users, search):
    from tests.dashboard.test_weights_page import CONFIG as WEIGHTS, rows
    from webapp.searches.models import WeightGeneration

    weights = lifecycle.create_search(users["owner"], "es", WEIGHTS)
    for row in rows(2):
        WeightGeneration.objects.create(search=weights, **row)
    ids = f"{search.pk},{weights.pk}"
    assert owner_client.get(reverse("compare"), {"ids": ids}).status_code == 200
    data = owner_client.get(reverse("api-compare"), {"ids": ids}).json()
    assert [t["name"] for t in data["figures"]["best_evaluations"]["data"]] == [f"#{search.pk} mine", f"#{weights.pk} es"]
    assert any(row["field"] == "kind" and row["differs"] for row in data["config"])
    lines = owner_client.get(reverse("compare-csv"), {"ids": ids}).content.decode().splitlines()
    header = lines[0].split(",")
    assert header[:3] == ["search", "search_name", "number"] and "generation" in header  # both logs' columns
    assert len(lines) == 1 + 10 + 2 and lines[-1].startswith(f"{weights.pk},es,")
