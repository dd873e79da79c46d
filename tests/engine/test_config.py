"""A search's configuration: defaults for what is left out, and every bad value named by its field."""
from __future__ import annotations

import pytest

from webapp.searches.config import ConfigError, check_config, planned_evaluations


def test_an_empty_configuration_is_a_complete_default_search():
    config = check_config({})
    assert config["space"]["name"] == "chain" and config["strategy"]["name"] == "regularized"
    assert config["dataset"] == "digits" and config["pool"] == "eval"
    assert config["training"] == {"epochs": 3, "batch_size": 64, "learning_rate": 1e-3, "weight_decay": 0.0,
                                  "max_seconds": None, "seed": 0, "optimizer": "adam", "precision": "fp32"}
    assert config["evaluation"] == {"mode": "train", "keep_weights": 5}
    assert check_config(config) == config  # checking twice changes nothing


def test_a_partial_section_keeps_the_defaults_of_the_rest():
    config = check_config({"strategy": {"params": {"max_evaluations": 8}}, "space": {"max_layers": 3},
                           "training": {"epochs": 1}})
    assert config["strategy"]["name"] == "regularized" and config["strategy"]["params"]["max_evaluations"] == 8
    assert config["space"]["name"] == "chain" and config["space"]["max_layers"] == 3
    assert config["training"]["epochs"] == 1 and config["training"]["batch_size"] == 64
    assert planned_evaluations(config) == 8


@pytest.mark.parametrize("data, field", [
    ([], "config"),
    ({"colour": "red"}, "colour"),
    ({"space": {"name": "transformer"}}, "space"),
    ({"strategy": {"name": "annealing"}}, "strategy.name"),
    ({"strategy": {"params": {"population": -3}}}, "strategy.params.population"),
    ({"strategy": {"params": "many"}}, "strategy.params"),
    ({"dataset": "imagenet"}, "dataset"),
    ({"training": {"epochs": 0}}, "training.epochs"),
    ({"training": {"epochs": 2.5}}, "training.epochs"),
    ({"training": {"learning_rate": "fast"}}, "training.learning_rate"),
    ({"training": {"learning_rate": float("nan")}}, "training.learning_rate"),
    ({"training": {"optimizer": "lbfgs"}}, "training.optimizer"),
    ({"training": {"precision": "fp8"}}, "training.precision"),
    ({"training": {"momentum": 0.9}}, "training.momentum"),
    ({"evaluation": {"mode": "guess"}}, "evaluation.mode"),
    ({"evaluation": {"mode": "train", "keep_weights": -1}}, "evaluation.keep_weights"),
    ({"evaluation": {"mode": "train", "keep_weights": 2.5}}, "evaluation.keep_weights"),
    ({"evaluation": {"mode": "train", "duration": 3}}, "evaluation.duration"),
    ({"evaluation": {"mode": "simulated", "duration": -1}}, "evaluation.duration"),
    ({"evaluation": {"mode": "simulated", "faults": {"kill": "all"}}}, "evaluation.faults"),
    ({"pool": "eval queue!"}, "pool"),
])
def test_every_bad_value_names_its_field(data, field):
    with pytest.raises(ConfigError) as error:
        check_config(data)
    assert error.value.field == field
    assert str(error.value).startswith(f"{field}: ")


def test_generations_bound_the_plan_when_there_is_no_budget():
    config = check_config({"strategy": {"name": "generational", "params": {"population": 20, "generations": 20}}})
    assert planned_evaluations(config) == 400
