"""An individual's inference schedule on its page: stages, strategies, latency against the baselines."""
from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.dashboard.schedule_panel import schedule_view
from webapp.searches.models import Individual

pytestmark = pytest.mark.django_db

REPORT = {
    "device": "cpu", "batch": 1, "chosen": "optimal", "latency_ms": 1.5,
    "measured_ms": {"sequential": 3.0, "greedy": 2.5, "optimal": 1.5}, "module_ms": 2.9,
    "modelled_ms": {"sequential": 2.8, "greedy": 2.6, "optimal": 1.4},
    "schedule": {"stages": [{"ops": ["L0.conv_bn"], "strategy": "concurrent", "cost": 0.2},
                            {"ops": ["L1.e01", "L1.e02", "L1.e03"], "strategy": "merged", "cost": 0.9},
                            {"ops": ["L1.e12", "L2.classifier"], "strategy": "concurrent", "cost": 0.3}], "cost": 1.4},
    "graph": {"ops": 6, "width": 3},
    "search": {"seconds": 0.05, "dp_seconds": 0.01, "states": 9, "stages_costed": 9, "blocks": 3, "profiled": 7,
               "cache_hits": 11, "cache_misses": 7},
}


def test_the_individual_page_shows_its_schedule(owner_client, search):
    individual = Individual.objects.get(search=search, number=4)
    individual.metrics = {**individual.metrics, "latency": 1.5, "schedule": REPORT}
    individual.save()
    html = owner_client.get(reverse("individual-detail", args=[search.pk, 4])).content.decode()
    assert 'id="schedule"' in html and 'id="schedule-latency">1.500 ms' in html
    assert "L1.e01, L1.e02, L1.e03" in html and "<td>merged</td>" in html
    assert "<td>sequential</td><td>3.000</td><td>2.800</td><td>1.00x</td>" in html
    assert "<td>optimal</td><td>1.500</td><td>1.400</td><td>2.00x</td>" in html
    assert "{&#x27;device&#x27;" not in html  # the report is not dumped among the metrics


def test_an_individual_without_a_schedule_has_no_panel(owner_client, search):
    html = owner_client.get(reverse("individual-detail", args=[search.pk, 4])).content.decode()
    assert 'id="schedule"' not in html


@pytest.mark.parametrize("broken", [None, "text", {"device": "cpu"}, {**REPORT, "schedule": {"stages": "x"}}])
def test_a_schedule_the_page_cannot_read_is_left_out(broken):
    assert schedule_view({"schedule": broken}) is None


def test_the_best_zip_holds_schedule_json_where_latency_was_measured(search):
    import io
    import json
    import zipfile

    from webapp.services import exports

    best = Individual.objects.get(search=search, number=9)
    best.metrics = {**best.metrics, "latency": 1.5, "schedule": REPORT}
    best.save()
    out = io.BytesIO()
    names = exports.best_zip(search, 2, out)
    assert "rank01_n9/schedule.json" in names and "rank02_n8/schedule.json" not in names
    document = json.loads(zipfile.ZipFile(io.BytesIO(out.getvalue())).read("rank01_n9/schedule.json"))
    assert document["stages"] == REPORT["schedule"]["stages"]
    assert document["device"] == "cpu" and document["batch"] == 1 and document["latency_ms"] == 1.5
    assert "inference schedule" in exports.zip_contents(best)


def test_the_form_turns_latency_on_with_a_batch_size_and_names_a_bad_one():
    from webapp.dashboard.architecture_form import DEFAULTS, SearchForm

    form = SearchForm(data={**DEFAULTS, "strategy": "nsga2", "objectives": "accuracy:max, latency:min",
                            "latency_batch": "4"})
    assert form.is_valid(), form.errors
    assert form.config["evaluation"]["latency"] == {"batch": 4, "repeats": 10}
    assert SearchForm.initial_from("x", form.config)["latency_batch"] == 4
    off = SearchForm(data={**DEFAULTS})
    assert off.is_valid() and "latency" not in off.config["evaluation"]
    bad = SearchForm(data={**DEFAULTS, "latency_batch": "0"})
    assert not bad.is_valid() and "latency_batch" in bad.errors
    unmeasured = SearchForm(data={**DEFAULTS, "strategy": "nsga2", "objectives": "accuracy:max, latency:min"})
    assert not unmeasured.is_valid() and "evaluation.latency" in str(unmeasured.errors)


def test_a_schedule_that_did_not_pay_still_shows_the_optimal_stages(owner_client, search):
    optimal = {"stages": [{"ops": ["L0.conv_bn"], "strategy": "concurrent", "cost": 0.2},
                          {"ops": ["L1.e01", "L1.e02"], "strategy": "concurrent", "cost": 0.5}], "cost": 0.7}
    report = {**REPORT, "chosen": "sequential", "latency_ms": 3.0, "optimal": optimal}
    view = schedule_view({"schedule": report})
    assert view["chosen"] == "sequential" and [s["ops"] for s in view["stages"]] == [["L0.conv_bn"],
                                                                                     ["L1.e01", "L1.e02"]]
    individual = Individual.objects.get(search=search, number=5)
    individual.metrics = {**individual.metrics, "latency": 3.0, "schedule": report}
    individual.save()
    html = owner_client.get(reverse("individual-detail", args=[search.pk, 5])).content.decode()
    assert "did not pay on this device" in html and "L1.e01, L1.e02" in html
