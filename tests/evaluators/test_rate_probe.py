"""The scaling probe (``webapp.worker.rate_probe``): timed steps of the one training loop on one CPU device and on a
gang of ``cpu,cpu``, the simulated evaluator's answer from its duration model, and a failed probe that gives
``None`` (the worker then decides without it)."""
from __future__ import annotations

import pytest

from evaluators.evaluate import evaluate
from evaluators.simulated import STEPS_PER_EPOCH, draw_duration
from nas.allocation import single_seconds
from webapp.worker import rate_probe

from .conftest import TINY

GENOME, SPACE = TINY["chain"]
TRAINING = {"epochs": 2, "batch_size": 64, "learning_rate": 0.003, "seed": 1}


def trained(genome=GENOME, **evaluation) -> dict:
    return {"individual": 7, "search": 1, "key": "k", "genome": genome, "space": SPACE, "training": TRAINING,
            "dataset": "digits", "evaluation": {"mode": "train", **evaluation}}


def test_a_probe_times_steps_of_the_training_loop_without_training_the_candidate():
    result = evaluate(GENOME, SPACE, TRAINING, "digits", "cpu", probe=3)
    assert result.ok and result.curve == []  # no epoch trained, nothing validated
    assert result.metrics["probe_rate"] > 0
    full = evaluate(GENOME, SPACE, TRAINING, "digits", "cpu")
    assert result.metrics["probe_steps"] == full.metrics["steps"]  # the whole evaluation's steps


def test_a_probe_on_one_cpu_and_on_a_gang_of_two():
    answer = rate_probe.measure(trained(), [["cpu"], ["cpu", "cpu"]])
    assert answer is not None and set(answer["rates"]) == {1, 2}
    assert all(rate > 0 for rate in answer["rates"].values()) and answer["seconds"] > 0
    assert single_seconds(answer["rates"], answer["steps"]) > 0


def test_a_simulated_candidate_answers_from_its_duration_model():
    evaluation = {"mode": "simulated", "duration": 2.0, "distribution": "lognormal", "sigma": 1.0, "efficiency": 0.9}
    individual = {**trained(), "key": "abc", "evaluation": evaluation}
    answer = rate_probe.measure(individual, [["cpu"], ["cpu", "cpu"]])
    assert answer["steps"] == STEPS_PER_EPOCH * TRAINING["epochs"]
    assert single_seconds(answer["rates"], answer["steps"]) == pytest.approx(draw_duration(evaluation, "abc"))
    assert answer["rates"][2] / answer["rates"][1] == pytest.approx(2 * 0.9)
    assert answer["seconds"] < 1  # no sleeping


def test_a_failed_or_inapplicable_probe_is_none(monkeypatch):
    assert rate_probe.measure(trained({"layers": "nonsense"}), [["cpu"]]) is None  # invalid genome
    assert rate_probe.measure({**trained(), "evaluation": {"mode": "supernet"}}, [["cpu"]]) is None

    def broken(*args, **kwargs):
        raise RuntimeError("the probe broke")

    monkeypatch.setattr("evaluators.evaluate.evaluate", broken)
    assert rate_probe.measure(trained(), [["cpu"]]) is None


def test_a_probe_inside_the_training_goes_on_from_its_steps_or_ends_it_when_declined():
    asked = []

    def keep(rate, steps):
        asked.append((rate, steps))
        return True

    plain = evaluate(GENOME, SPACE, TRAINING, "digits", "cpu")
    going_on = evaluate(GENOME, SPACE, TRAINING, "digits", "cpu", on_probe=keep)
    assert going_on.ok and len(asked) == 1 and asked[0][0] > 0 and asked[0][1] == plain.metrics["steps"]
    # the probe's steps are the training's first: the same training, nothing started again
    assert going_on.metrics["steps"] == plain.metrics["steps"]
    assert going_on.fitness == pytest.approx(plain.fitness) and going_on.curve == plain.curve
    declined = evaluate(GENOME, SPACE, TRAINING, "digits", "cpu", on_probe=lambda rate, steps: False)
    assert declined.failure == "declined" and declined.curve == []


def test_a_gangs_probe_inside_the_training_is_answered_by_the_worker_and_declined_on_every_rank():
    """On a gang the leader's probe goes to the worker (``evaluators.data_parallel``), which answers once; a
    decline ends every rank at the same step: the gang's result, not a lost rank."""
    asked = []

    def keep(rate, steps):
        asked.append((rate, steps))
        return True

    plain = evaluate(GENOME, SPACE, TRAINING, "digits", "cpu")
    going_on = evaluate(GENOME, SPACE, TRAINING, "digits", ["cpu", "cpu"], on_probe=keep, threads=1)
    assert going_on.ok and going_on.device == "cpu,cpu", going_on.message
    assert len(asked) == 1 and asked[0][0] > 0 and asked[0][1] == plain.metrics["steps"]
    assert going_on.metrics["steps"] == plain.metrics["steps"]  # trained on from the probe's steps, not again
    declined = evaluate(GENOME, SPACE, TRAINING, "digits", ["cpu", "cpu"], on_probe=lambda rate, steps: False,
                        threads=1)
    assert declined.failure == "declined" and declined.curve == [], declined.message


def test_a_simulated_candidate_asks_its_probe_at_once():
    from evaluators.simulated import simulate

    evaluation = {"mode": "simulated", "duration": 0.05, "distribution": "lognormal", "sigma": 1.0}
    asked = []
    result = simulate("abc", evaluation, epochs=2, on_probe=lambda rate, steps: asked.append(steps / rate) or True)
    assert result.ok and asked == [pytest.approx(draw_duration(evaluation, "abc"))]
    assert simulate("abc", evaluation, epochs=2, on_probe=lambda rate, steps: False).failure == "declined"
