"""The early-stopping part of a search's configuration: defaults, round trips, and every bad value named."""
from __future__ import annotations

import pytest

from webapp.control.pruning import build
from webapp.searches.config import ConfigError, check_config
from webapp.searches.pruner_config import describe


def test_no_pruner_leaves_the_configuration_as_it_was():
    config = check_config({})
    assert "pruner" not in config and "report_every" not in config["evaluation"]


def test_a_pruner_gets_its_defaults_and_checks_twice_the_same():
    config = check_config({"pruner": {"name": "curve", "k": 3}, "evaluation": {"report_every": 10},
                           "training": {"epochs": 8}})
    assert config["pruner"] == {"name": "curve", "min_steps": 1.0, "k": 3, "top_share": 0.05, "threshold": 0.05,
                                "confirm_span": 0.05, "min_points": 4,
                                "neighbours": 20, "audit": 0.0, "upper": None, "known_objectives": None}
    assert config["evaluation"]["report_every"] == 10
    assert check_config(config) == config
    pruner = build(config)
    assert pruner.name == "curve" and pruner.max_steps == 8.0 and pruner.k == 3
    assert pruner.upper == 1.0, "the engine's curves are accuracies: predictions are capped at 1"


def test_nsga2_curve_pruning_knows_the_objectives_known_before_training():
    config = check_config({"strategy": {"name": "nsga2", "params": {"population": 4, "generations": 2}},
                           "pruner": {"name": "curve"}})
    assert build(config).known_objectives == [["params", "min"]]


@pytest.mark.parametrize("data, field", [
    ({"pruner": 3}, "pruner"),
    ({"pruner": {"name": "hyperband"}}, "pruner.name"),
    ({"pruner": {"name": "asha", "eta": 1}}, "pruner.eta"),
    ({"pruner": {"name": "curve", "threshold": 0.9}}, "pruner.threshold"),
    ({"pruner": {"name": "median", "kk": 1}}, "pruner.kk"),
    ({"pruner": {"name": "curve", "audit": "some"}}, "pruner.audit"),
    ({"evaluation": {"report_every": 0}}, "evaluation.report_every"),
    ({"evaluation": {"report_every": 2.5}}, "evaluation.report_every"),
    ({"evaluation": {"mode": "simulated", "curves": "wiggly"}}, "evaluation.curves"),
])
def test_every_bad_value_names_its_field(data, field):
    with pytest.raises(ConfigError) as error:
        check_config(data)
    assert error.value.field == field and str(error.value).startswith(f"{field}: ")


def test_the_form_can_describe_every_pruner():
    described = {entry["name"]: entry for entry in describe()}
    assert set(described) == {"none", "median", "asha", "curve"}
    assert {p["name"] for p in described["asha"]["params"]} == {"min_steps", "eta", "audit"}
    assert all(entry["help"] for entry in described.values())


def test_search_create_set_takes_a_pruner_whole_or_field_by_field():
    from webapp.stack.management.commands.search import apply_overrides, parse_overrides

    whole = apply_overrides({}, parse_overrides(['pruner={"name": "curve", "k": 4}', "evaluation.report_every=20"]))
    by_field = apply_overrides({}, parse_overrides(["pruner.name=curve", "pruner.k=4", "evaluation.report_every=20"]))
    assert check_config(whole) == check_config(by_field)
    assert check_config(whole)["pruner"]["k"] == 4 and check_config(whole)["evaluation"]["report_every"] == 20
