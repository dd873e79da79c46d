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
    ({"dataset": 42}, "dataset"),  # an unknown name is refused by create_search (test_own_datasets)
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
    ({"evaluation": {"mode": "train", "compression": {"kind": "segment_topk", "ratio": 0}}}, "evaluation.compression"),
    ({"evaluation": {"mode": "train", "compression": {"kind": "powersgd", "rank": 1.5}}}, "evaluation.compression"),
    ({"evaluation": {"mode": "train", "compression": "zip"}}, "evaluation.compression"),
    ({"evaluation": {"mode": "simulated", "compression": "fp16"}}, "evaluation.compression"),
    ({"pool": "eval queue!"}, "pool"),
    ({"strategy": {"name": "reinforce", "params": {"objectives": [["accuracy", "max"], ["params", "min"]]}}},
     "strategy.params.objectives"),
    ({"strategy": {"name": "reinforce", "params": {"policy_learning_rate": -1}}},
     "strategy.params.policy_learning_rate"),
    ({"strategy": {"name": "tpe", "params": {"startup_trials": 0}}}, "strategy.params.startup_trials"),
    ({"strategy": {"name": "tpe", "params": {"population": 10}}}, "strategy.params"),
])
def test_every_bad_value_names_its_field(data, field):
    with pytest.raises(ConfigError) as error:
        check_config(data)
    assert error.value.field == field
    assert str(error.value).startswith(f"{field}: ")


def test_the_explorers_take_their_defaults_and_say_why_reinforce_takes_one_objective():
    reinforce = check_config({"strategy": {"name": "reinforce"}})["strategy"]
    assert reinforce["params"] == {"objectives": [["fitness", "max"]], "policy_learning_rate": 0.3, "entropy": 0.05,
                                   "baseline_decay": 0.9, "max_evaluations": 24}
    tpe = check_config({"strategy": {"name": "tpe", "params": {
        "objectives": [["accuracy", "max"], ["params", "min"]], "max_evaluations": 50}}})["strategy"]
    assert tpe["params"] == {"objectives": [["accuracy", "max"], ["params", "min"]], "startup_trials": 10,
                             "ei_candidates": 24, "max_evaluations": 50}
    with pytest.raises(ConfigError, match="reinforce learns from one reward.*choose nsga2 or tpe"):
        check_config({"strategy": {"name": "reinforce", "params": {"objectives": [["a", "max"], ["b", "min"]]}}})
    with pytest.raises(ConfigError, match="objective latency needs the latency measured"):
        check_config({"strategy": {"name": "tpe", "params": {"objectives": [["latency", "min"]]}}})


def test_generations_bound_the_plan_when_there_is_no_budget():
    config = check_config({"strategy": {"name": "generational", "params": {"population": 20, "generations": 20}}})
    assert planned_evaluations(config) == 400


@pytest.mark.parametrize("data, field", [
    ({"space": {"max_layers": 1_000_000}}, "space"),
    ({"space": {"name": "cell", "channels": 10**9}}, "space"),
    ({"strategy": {"params": {"population": 10**9}}}, "strategy.params.population"),
    ({"strategy": {"params": {"max_evaluations": 10**12}}}, "strategy.params.max_evaluations"),
    ({"strategy": {"seed": 2**70}}, "strategy.seed"),
    ({"strategy": {"name": "tpe", "params": {"max_evaluations": 10_001}}}, "strategy.params.max_evaluations"),
    ({"strategy": {"name": "tpe", "params": {"ei_candidates": 10**6}}}, "strategy.params.ei_candidates"),
    ({"strategy": {"name": "generational", "params": {"generations": 10**7}}}, "strategy.params.generations"),
    ({"strategy": {"name": "nsga2", "params": {"objectives": [[f"m{i}", "max"] for i in range(50)]}}},
     "strategy.params.objectives"),
    ({"training": {"epochs": 10**6}}, "training.epochs"),
    ({"training": {"batch_size": 10**7}}, "training.batch_size"),
    ({"training": {"seed": 2**70}}, "training.seed"),
    ({"training": {"max_seconds": 10**9}}, "training.max_seconds"),
    ({"evaluation": {"mode": "train", "keep_weights": 10**6}}, "evaluation.keep_weights"),
    ({"evaluation": {"mode": "simulated", "duration": 10**9}}, "evaluation.duration"),
    ({"evaluation": {"mode": "simulated", "faults": {"kill": ["k"] * 5000}}}, "evaluation.faults"),
    ({"pool": "control"}, "pool"),
    ({"pool": "gpu"}, "pool"),
])
def test_every_field_has_an_upper_bound(data, field):
    """One request must not be able to make a loop or a worker hold more than a search can use (issue: a
    million-layer space jammed the control plane); each bound is checked here, for the form, API and CLI."""
    with pytest.raises(ConfigError) as error:
        check_config(data)
    assert error.value.field == field, str(error.value)


def test_the_evaluation_pools_that_are_allowed():
    assert check_config({"pool": "eval.a100"})["pool"] == "eval.a100"
    assert check_config({"pool": "eval.node1.cuda0"})["pool"] == "eval.node1.cuda0"  # one device's own queue


def test_the_readme_documents_every_field_with_its_bounds():
    """The configuration reference in the README names every strategy parameter and budget field (a new one
    must be documented) and the bounds the checker enforces."""
    from pathlib import Path

    from evaluators import budget
    from nas.strategies import STRATEGIES

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[readme.index("### A search's configuration"):readme.index("## Commands")]
    names = {d["name"] for cls in STRATEGIES.values() for d in cls.describe_params()} | set(budget.rules())
    assert [name for name in sorted(names) if f"`{name}`" not in section and f".{name}`" not in section] == []
    for bound in ("1 to 1,000,000", "2 to 10,000", "1 to 64 layers", "0 to 2^32 - 1", "1 to 1,000", "0 to 100"):
        assert bound in section, bound


@pytest.mark.parametrize("value, stored", [
    ("none", "none"), ("fp16", "fp16"), ({"kind": "segment_topk"}, {"kind": "segment_topk", "ratio": 0.01}),
    ({"kind": "segment_topk", "ratio": 1}, {"kind": "segment_topk", "ratio": 1.0}),
    ({"kind": "powersgd", "rank": 4.0}, {"kind": "powersgd", "rank": 4}),
])
def test_a_gangs_compression_is_stored_checked(value, stored):
    config = check_config({"evaluation": {"mode": "train", "devices": 2, "compression": value}})
    assert config["evaluation"]["compression"] == stored
    assert "compression" not in check_config({"evaluation": {"mode": "train"}})["evaluation"]  # dense


@pytest.mark.parametrize("value, words", [
    ({"kind": "segment_topk", "ratio": 1.5}, "ratio must be a number in (0, 1]"),
    ({"kind": "powersgd", "rank": 0}, "rank must be a positive integer"),
    ({"kind": "topk"}, "the kinds are none, segment_topk, powersgd, fp16"),
    ({"kind": "fp16", "ratio": 0.1}, "fp16 takes kind only"),
    (3, "must be a name"),
])
def test_a_bad_compression_says_what_is_allowed(value, words):
    with pytest.raises(ConfigError) as error:
        check_config({"evaluation": {"mode": "train", "compression": value}})
    assert error.value.field == "evaluation.compression" and words in str(error.value)
