"""Early stopping in the pages: the form's pruner fields, the individual page's reason, the search page's savings."""
from __future__ import annotations

from django.urls import reverse

from webapp.dashboard.architecture_form import DEFAULTS, SearchForm
from webapp.searches.config import check_config


def test_the_form_builds_a_pruner_and_its_report_interval():
    form = SearchForm(data={**DEFAULTS, "pruner": "curve", "pruner_k": "3", "pruner_threshold": "0.1",
                            "pruner_eta": "4", "report_every": "10"})
    assert form.is_valid(), form.errors
    assert form.config["pruner"]["name"] == "curve" and form.config["pruner"]["k"] == 3
    assert "eta" not in form.config["pruner"], "another pruner's parameter is not sent"
    assert form.config["evaluation"]["report_every"] == 10
    assert form.config == check_config(form.config)
    again = SearchForm(initial=SearchForm.initial_from("again", form.config))
    assert again.initial["pruner"] == "curve" and again.initial["pruner_k"] == 3 and again.initial["report_every"] == 10


def test_a_bad_pruner_parameter_lands_on_its_field():
    form = SearchForm(data={**DEFAULTS, "pruner": "curve", "pruner_threshold": "0.9"})
    assert not form.is_valid() and "pruner_threshold" in form.errors
    plain = SearchForm(data=DEFAULTS)
    assert plain.is_valid() and "pruner" not in plain.config


def test_individual_page_shows_why_it_was_stopped(owner_client, search):
    from webapp.searches.models import Individual

    individual = Individual.objects.get(search=search, number=2)
    individual.status, individual.epochs_trained, individual.predicted_fitness = "pruned", 1.5, 0.61
    individual.prune = {"stop": True, "predicted": 0.61, "spread": 0.02, "epoch": 1.5,
                        "reason": "predicted 0.61 +- 0.033 at epoch 3; P(beats the 5th best) = 0.2%"}
    individual.curve = [{"epoch": 1, "val_accuracy": 0.4}, {"epoch": 1.5, "val_accuracy": 0.45}]
    individual.save()
    html = owner_client.get(reverse("individual-detail", args=[search.pk, 2])).content.decode()
    assert "P(beats the 5th best) = 0.2%" in html and 'id="predicted-fitness">0.6100' in html
    assert "predicted (90% interval)" in html  # the dashed prediction in the curve's figure


def test_search_page_shows_the_epochs_saved(owner_client, search):
    search.stats = {**(search.stats or {}), "pruning": {"pruner": "asha", "epochs_trained": 30.0,
                                                        "epochs_budget": 40.0, "pruned": 4, "audit": {}}}
    search.save(update_fields=["stats"])
    html = owner_client.get(reverse("search-detail", args=[search.pk])).content.decode()
    assert "pruned 4: 30 of 40 epochs trained (25% saved)" in html and 'id="chart-curves"' in html


def test_search_page_shows_the_observed_coverage_of_the_pruners_intervals(owner_client, search):
    """The curve pruner's audit report carries the coverage of its past intervals: shown next to the audit."""
    coverage = {"stated": 0.9, "intervals": 120, "held": 106, "rate": 106 / 120, "candidates": 12}
    search.stats = {**(search.stats or {}), "pruning": {
        "pruner": "curve", "epochs_trained": 30.0, "epochs_budget": 40.0, "pruned": 4,
        "audit": {"audited": 2, "finished": 2, "false_stops": 0, "rate": 0.0, "coverage": coverage}}}
    search.save(update_fields=["stats"])
    html = owner_client.get(reverse("search-detail", args=[search.pk])).content.decode()
    assert "false stops 0% of 2 audited; observed coverage 88% of stated 90% (120 intervals)" in html


def test_the_pruning_line_names_no_coverage_before_any_interval():
    from webapp.searches.pruning_stats import describe, saved_epochs

    stats = {"pruning": {"pruner": "curve", "epochs_trained": 10.0, "epochs_budget": 10.0, "pruned": 0,
                         "audit": {"audited": 0, "finished": 0, "false_stops": 0, "rate": None,
                                   "coverage": {"stated": 0.9, "intervals": 0, "held": 0, "rate": None}}}}
    assert "coverage" not in describe(stats) and saved_epochs(stats)["coverage"] is None
