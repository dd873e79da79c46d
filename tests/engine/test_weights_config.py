"""A weight search's configuration (seed 001): defaults, the issue's field errors, and the best architecture of
another search as the network. Nothing is saved when a field is bad."""
from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.engine.conftest import owner
from webapp.searches.config import ConfigError, check_config, planned_evaluations
from webapp.searches.models import Individual, Search
from webapp.services import lifecycle

WEIGHTS = {"kind": "weights", "network": {"kind": "mlp", "layers": [64, 32, 10]}}


def test_a_weight_search_has_complete_defaults():
    config = check_config(WEIGHTS)
    assert config["kind"] == "weights" and config["dataset"] == "digits" and config["pool"] == "eval"
    assert config["weights"] == {"population": 64, "sigma": 0.05, "learning_rate": 0.03, "batch_size": 256,
                                 "generations": 200, "seed": 0, "algorithm": "openai_es", "optimizer": "adam",
                                 "fitness": "loss", "method": "cu", "mirrored": True}
    assert config["parameters"] == 64 * 32 + 32 + 32 * 10 + 10
    assert check_config(config) == config  # checking twice changes nothing
    assert planned_evaluations(config) == 200 * 64
    assert "kind" not in check_config({"kind": "architecture"})  # architecture configs are as before


@pytest.mark.parametrize("data, field, words", [
    ({"weights": {"population": 9}}, "weights.population", "even with mirrored"),
    ({"weights": {"sigma": 0}}, "weights.sigma", "greater than 0"),
    ({"weights": {"sigma": -0.1}}, "weights.sigma", "must be in"),
    ({"weights": {"learning_rate": 0}}, "weights.learning_rate", "greater than 0"),
    ({"weights": {"method": "allreduce"}}, "weights.method", "cu, su, scalars"),
    ({"weights": {"algorithm": "cma_es"}}, "weights.algorithm", "openai_es, snes"),
    ({"weights": {"mirrored": "yes"}}, "weights.mirrored", "true or false"),
    ({"weights": {"momentum": 0.9}}, "weights.momentum", "unknown field"),
    ({"network": {"kind": "mlp", "layers": [64, 4096, 4096, 10]}}, "network.layers", "more than"),
    ({"network": {"kind": "mlp", "layers": [63, 10]}}, "network.layers", "input size 64"),
    ({"network": {"kind": "transformer"}}, "network.kind", "mlp, genome"),
    ({"dataset": "synthetic"}, "dataset", "must be one of"),
    ({"strategy": {}}, "strategy", "unknown field for a weight search"),
    ({"kind": "both"}, "kind", "architecture, weights"),
])
def test_every_bad_value_names_its_field(data, field, words):
    with pytest.raises(ConfigError, match=words) as error:
        check_config({**WEIGHTS, **data})
    assert error.value.field == field and str(error.value).startswith(f"{field}: ")


def test_an_odd_population_is_fine_without_mirrored_sampling():
    assert check_config({**WEIGHTS, "weights": {"population": 9, "mirrored": False}})["weights"]["population"] == 9


@pytest.mark.django_db
def test_the_best_architecture_of_another_search_becomes_the_network():
    user = owner()
    source = lifecycle.create_search(user, "source", {"space": {"name": "chain", "max_layers": 4}})
    best_of = {**WEIGHTS, "network": {"kind": "best_of", "search": source.pk}}
    with pytest.raises(ConfigError, match="has no finished architecture") as error:
        lifecycle.create_search(user, "fine-tune", best_of)
    assert error.value.field == "network.search"
    with pytest.raises(ConfigError, match="no architecture search #999") as error:
        lifecycle.create_search(user, "fine-tune", {**WEIGHTS, "network": {"kind": "best_of", "search": 999}})
    assert Search.objects.count() == 1  # nothing saved
    genomes = [{"layers": [{"kernel": 3, "filters": 16}]}, {"layers": [{"kernel": 5, "filters": 32}]}]
    for number, (genome, fitness) in enumerate(zip(genomes, (0.5, 0.8))):
        Individual.objects.create(search=source, number=number, genome=genome, key=str(number), status="done",
                                  fitness=fitness)
    search = lifecycle.create_search(user, "fine-tune", best_of)
    network = search.config["network"]
    assert network["kind"] == "genome" and network["genome"] == genomes[1] and network["source_search"] == source.pk
    assert search.config["parameters"] > 0 and search.evaluations_total == 200 * 64
    assert check_config(search.config) == search.config


@pytest.mark.django_db
def test_search_create_sets_weight_fields_and_reports_the_bad_one(tmp_path):
    owner()
    path = tmp_path / "weights.json"
    path.write_text(json.dumps(WEIGHTS))
    with pytest.raises(CommandError, match=r"weights\.sigma"):
        call_command("search", "create", "--name", "bad", "--config", str(path), "--owner", "tester",
                     "--set", "weights.sigma=0")
    assert not Search.objects.exists()
    call_command("search", "create", "--name", "es", "--config", str(path), "--owner", "tester",
                 "--set", "weights.population=32", "--set", "weights.method=su")
    assert Search.objects.get().config["weights"]["method"] == "su"


@pytest.mark.django_db
def test_another_users_best_architecture_stays_theirs():
    from django.contrib.auth import get_user_model

    source = lifecycle.create_search(owner(), "source", {})
    Individual.objects.create(search=source, number=0, genome={"layers": [{"kernel": 3, "filters": 16}]}, key="0",
                              status="done", fitness=0.9)
    stranger = get_user_model().objects.create_user("stranger", password="pw-stranger-1")
    with pytest.raises(ConfigError, match=f"no architecture search #{source.pk}") as error:
        lifecycle.create_search(stranger, "mine now", {**WEIGHTS, "network": {"kind": "best_of", "search": source.pk}})
    assert error.value.field == "network.search" and not Search.objects.filter(owner=stranger).exists()
