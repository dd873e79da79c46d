"""Evaluations report their learning curve while they train and stop when told: real training on digits and
the simulated evaluator's realistic curves."""
from __future__ import annotations

import io
import json

from evaluators.evaluate import evaluate
from evaluators.reporting import report_points, safe
from evaluators.result import EvaluationResult
from evaluators.simulated import STEPS_PER_EPOCH, curve_of, simulate

from .conftest import TINY

GENOME, SPACE = TINY["chain"]
TRAINING = {"epochs": 4, "batch_size": 64, "learning_rate": 0.003, "seed": 1}


def test_report_points():
    assert report_points(10, 3, None) == [10, 20, 30]
    assert report_points(10, 2, 4) == [4, 8, 12, 16, 20]
    assert report_points(10, 1, 30) == [10]
    assert report_points(10, 0, None) == []


def test_a_reporter_that_raises_never_stops_the_training():
    def broken(step, epoch, metrics):
        raise ConnectionError("redis is away")

    assert safe(broken)(1, 0.1, {}) is False and safe(None)(1, 0.1, {}) is False


def test_training_reports_each_epoch_and_finishes_when_not_stopped():
    seen = []
    result = evaluate(GENOME, SPACE, TRAINING, "digits", "cpu",
                      report=lambda step, epoch, metrics: seen.append((step, epoch, metrics)) or False)
    assert result.ok and result.status == "ok"
    assert [epoch for _, epoch, _ in seen] == [1.0, 2.0, 3.0]  # the last epoch's end is the result itself
    assert all(0.0 <= m["val_accuracy"] <= 1.0 for _, _, m in seen)
    assert [p["epoch"] for p in result.curve] == [1, 2, 3, 4]


def test_a_stopped_training_is_pruned_with_its_partial_curve_and_weights():
    steps_seen = []

    def stop_at_second(step, epoch, metrics):
        steps_seen.append(step)
        return len(steps_seen) == 2

    weights = io.BytesIO()
    result = evaluate(GENOME, SPACE, TRAINING, "digits", "cpu", report=stop_at_second, report_every=7,
                      weights_to=weights)
    assert result.status == "pruned" and result.pruned and not result.ok
    assert steps_seen == [7, 14]
    assert [p["step"] for p in result.curve] == [7, 14] and result.metrics["steps"] == 14
    assert result.fitness == result.curve[-1]["val_accuracy"]
    assert weights.tell() > 0, "the weights it had are kept"
    again = EvaluationResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again.pruned and again.curve == result.curve


def test_simulated_realistic_curve_reports_and_stops():
    config = {"duration": 0.0, "curves": "realistic"}
    full = simulate("k1", config, epochs=10)
    assert full.status == "ok" and len(full.curve) == 10
    assert abs(full.fitness - curve_of("k1", 10).final) < 0.1
    calls = []
    pruned = simulate("k1", {**config, "report_every": 50}, epochs=10,
                      report=lambda step, epoch, metrics: calls.append(step) or step >= 300)
    assert pruned.status == "pruned" and calls == [50, 100, 150, 200, 250, 300]
    assert pruned.metrics["epochs"] == 300 / STEPS_PER_EPOCH and pruned.curve[-1]["step"] == 300
    assert simulate("k1", config, epochs=10).curve == full.curve, "a genome's curve is fixed by its key"
    speeds = {round(curve_of(f"k{i}", 10).tau, 3) for i in range(6)}
    assert len(speeds) == 6, "the speed varies by genome"


def test_simulated_default_is_unchanged():
    result = simulate("k1", {"duration": 0.0}, epochs=3)
    assert result.status == "ok" and [p["epoch"] for p in result.curve] == [1, 2, 3]
