"""Issue 36, item 11: a weight search over another search's best architecture (``best_of``) starts from that
architecture's kept trained weights (batch norm's statistics included) when the source kept them, from the seeded
initialisation only when it did not, and its page says which."""
from __future__ import annotations

import io

import pytest
from django.urls import reverse

from evaluators.evaluate import evaluate
from evaluators.model_files import load_weights
from evaluators.neuroevolution import WeightEvolution, WeightRun
from tests.engine.conftest import finished, launched, owner, wait_until
from webapp.searches.models import Individual, Search, WeightGeneration, Weights
from webapp.searches.weights_config import FINE_TUNING
from webapp.services import lifecycle

SPACE = {"name": "chain", "max_layers": 2}
GENOME = {"layers": [{"kernel": 3, "filters": 16}]}
#: Fine-tuning steps: noise and a learning rate small against trained weights.
TUNING = {"population": 8, "generations": 1, "sigma": 0.005, "learning_rate": 0.0005, "seed": 0, "batch_size": 128}


def best_of(source: int, **weights) -> dict:
    return {"kind": "weights", "network": {"kind": "best_of", "search": source}, "dataset": "digits",
            "weights": {**TUNING, **weights}}


def trained_source(keep: bool) -> tuple[Search, float]:
    """An architecture search with one finished individual, trained here on digits when its weights are kept."""
    source = lifecycle.create_search(owner(), "source", {"space": SPACE})
    if not keep:
        Individual.objects.create(search=source, number=0, genome=GENOME, key="0", status="done", fitness=0.9)
        return source, 0.9
    weights = io.BytesIO()
    result = evaluate(GENOME, SPACE, {"epochs": 2, "learning_rate": 0.003}, "digits", "cpu", weights_to=weights)
    assert result.status == "ok" and result.fitness > 0.5, result
    individual = Individual.objects.create(search=source, number=0, genome=GENOME, key="0", status="done",
                                           fitness=result.fitness)
    if keep:
        data = weights.getvalue()
        Weights.objects.create(individual=individual, data=data, nbytes=len(data), sha256="0" * 64)
    return source, result.fitness


@pytest.mark.django_db
def test_kept_weights_are_the_start_and_travel_with_the_state(client):
    source, accuracy = trained_source(keep=True)
    search = lifecycle.create_search(owner(), "fine-tune", best_of(source.pk))
    network = search.config["network"]
    assert network["start"] == "kept" and network["source_individual"] == 0
    evolution = WeightEvolution(WeightRun.from_config(search.config))
    assert evolution.validate() < 0.5  # the seeded network: about chance
    evolution.start_from(load_weights(io.BytesIO(bytes(Weights.objects.get().data))))
    assert evolution.validate() == pytest.approx(accuracy, abs=0.02)
    late = WeightEvolution(WeightRun.from_config(search.config))  # a worker that fetches the published state
    late.load_state(evolution.state_bytes())
    assert late.digest() == evolution.digest() and late.validate() == evolution.validate()
    client.force_login(owner())
    html = client.get(reverse("search-detail", args=[search.pk])).content.decode()
    assert "starts from the trained weights kept for its individual #0" in html
    untuned = lifecycle.create_search(owner(), "fine-tune with defaults", {
        "kind": "weights", "network": {"kind": "best_of", "search": source.pk}})
    assert {k: untuned.config["weights"][k] for k in FINE_TUNING} == FINE_TUNING  # smaller steps from trained weights


@pytest.mark.django_db
def test_without_kept_weights_it_starts_from_scratch_and_says_so(client):
    source, _ = trained_source(keep=False)
    search = lifecycle.create_search(owner(), "fine-tune", best_of(source.pk))
    assert search.config["network"]["start"] == "scratch"
    untuned = lifecycle.create_search(owner(), "from scratch with defaults", {
        "kind": "weights", "network": {"kind": "best_of", "search": source.pk}})
    assert untuned.config["weights"]["sigma"] == 0.05 and untuned.config["weights"]["learning_rate"] == 0.03
    client.force_login(owner())
    html = client.get(reverse("search-detail", args=[search.pk])).content.decode()
    assert f"starts from random weights: search #{source.pk} kept no trained weights" in html


@pytest.mark.integration
def test_a_real_weight_search_begins_where_its_source_ended(stack):
    """A real architecture search trains on digits and keeps its best's weights; a weight search over that
    architecture scores its first generation about as well as the source's best (not ~0.1, an untrained net)."""
    stack.evaluator("alpha", OMP_NUM_THREADS="1", wait=False)
    stack.control()
    source = finished(launched("source", {
        "space": SPACE, "strategy": {"name": "random", "seed": 1, "params": {"max_evaluations": 2}},
        "dataset": "digits", "training": {"epochs": 3, "learning_rate": 0.003},
        "evaluation": {"mode": "train", "keep_weights": 1}}).pk, timeout=240)
    assert source.status == Search.Status.FINISHED, source.status_reason
    wait_until(lambda: Weights.objects.filter(individual__search=source).exists(), 30, message="kept weights")
    assert source.best_fitness > 0.5
    search = finished(launched("fine-tune", best_of(source.pk)).pk, timeout=240)
    assert search.status == Search.Status.FINISHED, search.status_reason
    assert search.config["network"]["start"] == "kept"
    first = WeightGeneration.objects.get(search=search, number=0)
    assert first.validation_accuracy == pytest.approx(source.best_fitness, abs=0.05)
    assert first.best > -1.0  # minus the cross-entropy: an untrained network scores about -ln 10 = -2.3
    print(f"source best {source.best_fitness:.3f}; weight search generation 0: validation "
          f"{first.validation_accuracy:.3f}, best fitness {first.best:.3f}")
