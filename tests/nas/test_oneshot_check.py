"""The ranking check's choices (``nas.oneshot.ranking``): what each side ranks by, the reference as the mean of
repeated trainings, and the summary that names what it compared."""
from __future__ import annotations

import math

import pytest

from nas.oneshot import (check_point, check_summary, kendall_tau, noise_ceiling, rank_value, reference_value,
                         repeat_seed)


def point(accuracy, loss, trainings):
    return {"supernet_accuracy": accuracy, "supernet_loss": loss,
            "trainings": [{"accuracy": a, "loss": l} for a, l in trainings]}


def test_rank_values_are_higher_for_better_paths_and_none_when_missing():
    assert rank_value(0.9, 0.3, "accuracy") == 0.9 and rank_value(0.9, 0.3, "loss") == -0.3
    assert rank_value(None, 0.3, "accuracy") is None and rank_value(0.9, math.nan, "loss") is None
    with pytest.raises(ValueError, match="accuracy, loss"):
        rank_value(0.9, 0.3, "f1")


def test_the_reference_is_the_mean_over_the_trainings_that_gave_one():
    trainings = [{"accuracy": 0.9, "loss": 0.2}, {"accuracy": 0.8, "loss": 0.4}, {"accuracy": None, "loss": None}]
    assert reference_value(trainings, "accuracy") == pytest.approx(0.85)
    assert reference_value(trainings, "loss") == pytest.approx(-0.3)
    assert reference_value(trainings[2:], "loss") is None and reference_value([], "accuracy") is None
    assert [repeat_seed(3, r) for r in range(3)] == [3, 503, 1003]


def test_the_summary_ranks_by_the_chosen_sides_and_says_what_it_compared():
    # accuracies tie on the supernet's side; losses do not
    points = [point(0.99, 0.10, [(0.95, 0.20), (0.97, 0.10)]), point(0.99, 0.20, [(0.96, 0.30), (0.94, 0.25)]),
              point(0.98, 0.30, [(0.93, 0.40), (0.90, 0.50)]), point(0.97, 0.40, [(0.91, 0.60), (0.92, 0.55)]),
              point(0.96, 0.50, [(0.90, 0.70), (None, None)])]
    by_loss = check_summary(points, score="loss", reference="loss")
    assert by_loss["tau"] == pytest.approx(1.0) and by_loss["n"] == 5 and by_loss["repeats"] == 2
    assert by_loss["against"] == "supernet validation loss vs validation loss of the mean of 2 stand-alone trainings"
    by_accuracy = check_summary(points, score="accuracy", reference="accuracy")
    means = [0.96, 0.95, 0.915, 0.915, 0.90]
    assert by_accuracy["tau"] == pytest.approx(kendall_tau([0.99, 0.99, 0.98, 0.97, 0.96], means))  # tau-b: ties
    one = check_summary([{**p, "trainings": p["trainings"][:1]} for p in points])
    assert one["repeats"] == 1 and one["against"].endswith("of one stand-alone training")
    assert check_summary(points[:1])["tau"] is None
    shown = check_point(points[0], "loss", "accuracy")
    assert shown["supernet"] == 0.10 and shown["standalone"] == pytest.approx(0.96)


def test_with_two_trainings_the_summary_carries_the_references_own_noise_and_its_ceiling():
    points = [point(0.9 + i / 100, 0.5 - i / 100, [(0.8 + i / 100, 0.6 - i / 50), (0.8 + (i % 3) / 100, 0.5)])
              for i in range(6)]
    summary = check_summary(points, score="accuracy", reference="accuracy")
    noise = summary["reference_noise"]
    first, second = ([p["trainings"][r]["accuracy"] for p in points] for r in (0, 1))
    assert noise["n"] == 6 and noise["tau"] == pytest.approx(kendall_tau(first, second))
    assert noise["ceiling"] == pytest.approx(noise_ceiling(noise["tau"], 2)) and noise["tau"] < noise["ceiling"] < 1
    assert check_summary(points, reference="loss")["reference_noise"]["tau"] is None  # one training's loss is constant
    assert check_summary([{**p, "trainings": p["trainings"][:1]} for p in points])["reference_noise"] is None
    assert noise_ceiling(1.0, 3) == pytest.approx(1.0) and noise_ceiling(-0.3, 2) == 0.0
    assert noise_ceiling(0.3, 1) < noise_ceiling(0.3, 2) < noise_ceiling(0.3, 4)
