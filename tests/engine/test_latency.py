"""The latency objective: its configuration, and an nsga2 search over accuracy and measured latency on real
workers that train every cell and schedule its inference."""
from __future__ import annotations

import pytest

from webapp.searches.config import ConfigError, check_config

OBJECTIVES = [["accuracy", "max"], ["latency", "min"]]
CONFIG = {
    "space": {"name": "cell", "cells_per_stage": 1, "stages": 2, "channels": 8},
    "strategy": {"name": "nsga2", "seed": 2, "params": {"population": 4, "generations": 2,
                                                        "objectives": OBJECTIVES}},
    "dataset": "digits",
    "training": {"epochs": 1, "batch_size": 64, "learning_rate": 0.003},
    "evaluation": {"mode": "train", "keep_weights": 2, "latency": {"batch": 1, "repeats": 3}},
}


def test_latency_is_off_by_default_and_checked_when_asked_for():
    assert "latency" not in check_config({})["evaluation"]
    assert check_config({"evaluation": {"latency": True}})["evaluation"]["latency"] == {"batch": 1, "repeats": 10}
    config = check_config(CONFIG)
    assert config["evaluation"]["latency"] == {"batch": 1, "repeats": 3}
    assert check_config(config) == config
    simulated = check_config({"evaluation": {"mode": "simulated", "latency": {"batch": 8}}})
    assert simulated["evaluation"]["latency"] == {"batch": 8, "repeats": 10}


@pytest.mark.parametrize("evaluation, field", [
    ({"latency": {"batch": 0}}, "evaluation.latency.batch"),
    ({"latency": {"batch": 2.5}}, "evaluation.latency.batch"),
    ({"latency": {"repeats": 0}}, "evaluation.latency.repeats"),
    ({"latency": {"warmup": 1}}, "evaluation.latency.warmup"),
    ({"latency": "fast"}, "evaluation.latency"),
    ({"mode": "train"}, "evaluation.latency"),  # the objective latency with nothing measuring it
])
def test_bad_latency_settings_name_their_field(evaluation, field):
    with pytest.raises(ConfigError) as caught:
        check_config({**CONFIG, "evaluation": evaluation})
    assert caught.value.field == field


def test_simulated_evaluations_give_a_latency_only_when_asked():
    from evaluators.simulated import simulate

    assert "latency" not in simulate("k", {"duration": 0.0}).metrics
    assert simulate("k", {"duration": 0.0, "latency": {"batch": 1}}).objectives()["latency"] > 0


@pytest.mark.integration
def test_an_nsga2_search_over_accuracy_and_latency_fills_the_pareto_chart(stack):
    from tests.engine.conftest import assert_each_recorded_once, finished, launched
    from webapp.dashboard import charts
    from webapp.searches.models import Individual, Search
    from webapp.services import queries

    stack.evaluator("alpha", OMP_NUM_THREADS="1", wait=False)
    stack.control()
    search = finished(launched("accuracy and latency", CONFIG).pk, timeout=240)
    assert search.status == Search.Status.FINISHED, search.status_reason
    individuals = assert_each_recorded_once(search, 8)
    assert all(i.status == Individual.Status.DONE for i in individuals), [i.message for i in individuals]
    for individual in individuals:
        metrics = individual.metrics
        assert metrics["latency"] > 0, metrics.get("latency_error")
        report = metrics["schedule"]
        assert report["batch"] == 1 and report["latency_ms"] == metrics["latency"]
        assert set(report["measured_ms"]) == {"sequential", "greedy", "optimal"}
        assert all(stage["ops"] for stage in report["schedule"]["stages"])
    figure = charts.pareto(queries.pareto_points(search), queries.objectives_of(search))
    assert figure is not None
    xs = [x for trace in figure["data"] for x in trace["x"]]
    assert len(xs) >= 8 and all(isinstance(x, (int, float)) for x in xs)
