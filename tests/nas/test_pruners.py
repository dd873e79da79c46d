"""Every pruner against the contract, then what is particular to each, the curve's calibration, the registry."""
from __future__ import annotations

import math

import numpy as np
import pytest

from nas.pruners import PRUNERS, CurvePruner, get_pruner, pruner_from_state
from nas.pruners.extrapolation import Z90, predict
from nas.pruners.synthetic import SyntheticCurve
from nas.testing import PrunerContract
from nas.testing.pruners import MAX_STEPS, drive

CONFIGS = {
    "none": {},
    "median": {"min_steps": 2, "min_completed": 3},
    "asha": {"min_steps": 1, "eta": 3},
    "curve": {"min_steps": 3, "k": 3, "threshold": 0.05},
}


@pytest.fixture(params=list(CONFIGS))
def make_pruner(request):
    return lambda seed, direction: get_pruner(request.param, seed, direction, MAX_STEPS, **CONFIGS[request.param])


class TestPrunerContract(PrunerContract):
    pass


@pytest.mark.parametrize("name", ["median", "asha", "curve"])
def test_pruners_stop_some_and_save_epochs(name):
    run = drive(get_pruner(name, 0, "max", MAX_STEPS, **CONFIGS[name]), 0)
    assert any(d["stop"] for _, _, d in run.decisions), name
    assert sum(run.trained.values()) < len(run.trained) * MAX_STEPS


def test_none_never_stops():
    run = drive(get_pruner("none", 0, "max", MAX_STEPS), 0)
    assert not any(d["stop"] for _, _, d in run.decisions)
    assert set(run.trained.values()) == {MAX_STEPS}


def test_median_compares_with_completed_at_the_same_step():
    pruner = get_pruner("median", 0, "max", 10, min_steps=1, min_completed=3)
    for cid, level in enumerate((0.5, 0.6, 0.7)):
        for step in (1, 2, 3):
            pruner.report(cid, step, level + 0.01 * step)
        pruner.complete(cid, level + 0.03)
    pruner.report("a", 1, 0.62)  # above the median 0.61 at step 1
    assert not pruner.should_stop("a").stop
    pruner.report("b", 1, 0.55)
    decision = pruner.should_stop("b")
    assert decision.stop and "median" in decision.reason


def test_asha_rungs_and_one_in_eta():
    pruner = get_pruner("asha", 0, "max", 27, min_steps=1, eta=3)
    assert pruner.rungs() == [1, 3, 9]
    stops = []
    for cid, value in enumerate((0.9, 0.5, 0.4, 0.8, 0.3, 0.2, 0.85)):
        pruner.report(cid, 1, value)
        stops.append(pruner.should_stop(cid).stop)
    # the first two go on (fewer than eta at the rung); then only the top third of the rung goes on:
    # 0.8 is second of 4 (one goes on), 0.85 second of 7 (two go on)
    assert stops == [False, False, True, True, True, True, False]


def test_curve_stops_hopeless_and_keeps_promising():
    pruner = get_pruner("curve", 0, "max", 20, min_steps=3, k=2)
    for cid, ceiling in enumerate((0.9, 0.88, 0.86)):
        for step in range(1, 21):
            pruner.report(cid, step, ceiling - 0.5 * math.exp(-step / 3))
        pruner.complete(cid, ceiling)
    for step in range(1, 7):
        pruner.report("low", step, 0.6 - 0.4 * math.exp(-step / 2))
        pruner.report("high", step, 0.95 - 0.5 * math.exp(-step / 3))
    low, high = pruner.should_stop("low"), pruner.should_stop("high")
    assert low.stop and not high.stop
    assert abs(low.predicted - 0.6) < 0.05 and "P(beats the 2nd best)" in low.reason
    assert high.predicted > 0.88


def test_curve_caps_its_predictions_at_the_best_possible_value():
    steps = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    rising = [0.5, 0.62, 0.72, 0.8, 0.87, 0.93]  # a straight climb extrapolates far past 1
    free, capped = predict(steps, rising, 20.0), predict(steps, rising, 20.0, upper=1.0)
    assert free[0] > 1.0 >= capped[0]
    loss = get_pruner("curve", 0, "min", 20, upper=0.0)
    for step, value in zip(steps, rising):
        loss.report("a", step, 1.5 - value)  # a falling loss, never below 0
    assert loss.prediction("a")[0] >= 0.0


def test_curve_multi_objective_stops_only_the_dominated():
    pruner = get_pruner("curve", 0, "max", 20, min_steps=3, k=1, known_objectives=[["params", "min"]])
    pruner.know(0, {"params": 100.0})
    for step in range(1, 21):
        pruner.report(0, step, 0.9 - 0.5 * math.exp(-step / 3))
    pruner.complete(0, 0.9)
    for cid, params in (("bigger", 200.0), ("smaller", 50.0)):
        pruner.know(cid, {"params": params})
        for step in range(1, 7):
            pruner.report(cid, step, 0.6 - 0.4 * math.exp(-step / 2))
    # as accurate as 0.6 with more parameters than a 0.9 one: dominated; with fewer: on the front
    assert pruner.should_stop("bigger").stop
    assert not pruner.should_stop("smaller").stop


def test_curve_calibration_of_the_90_percent_interval():
    """On synthetic curves with known finals, seen for a quarter to four fifths of their budget, the stated 90%
    interval holds the true final value between 75% and 99% of the time."""
    rng = np.random.default_rng(12)
    inside = total = 0
    for index in range(120):
        curve = SyntheticCurve.draw(rng, 20.0)
        seen = int(rng.integers(5, 17))
        steps = [float(s) for s in range(1, seen + 1)]
        made = predict(steps, [curve.observe(s, rng) for s in steps], 20.0, 0, index)
        assert made is not None
        mean, spread = made
        total += 1
        inside += abs(mean - curve.final) <= Z90 * spread
    assert 0.75 <= inside / total <= 0.99, inside / total


def test_registry_and_errors_name_the_field():
    assert set(PRUNERS) == {"none", "median", "asha", "curve"}
    with pytest.raises(ValueError, match="Unknown pruner 'nope'"):
        get_pruner("nope")
    with pytest.raises(ValueError, match="`eta`"):
        get_pruner("asha", eta=1)
    with pytest.raises(ValueError, match="no parameter 'kk'"):
        get_pruner("curve", kk=3)
    with pytest.raises(ValueError, match="`direction`"):
        get_pruner("median", direction="up")
    with pytest.raises(ValueError, match="`max_steps`"):
        get_pruner("median", max_steps=0)
    with pytest.raises(ValueError, match="pruner state"):
        pruner_from_state([1])
    described = CurvePruner.describe_params()
    assert {d["name"] for d in described} >= {"k", "threshold", "min_steps", "audit"}
    assert all("help" in d and "default" in d for d in described)
