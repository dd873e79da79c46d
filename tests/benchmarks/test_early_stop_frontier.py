"""benchmarks/early_stop_frontier.py's pieces: the oracle warm-up floor, the shape-informed reference pruner, the
checks per setting and the Pareto frontier (numpy only, small pools)."""
import numpy as np

from benchmarks import early_stop_frontier as frontier
from benchmarks.early_stop_sim import mixed_pool, replay


def test_the_warm_up_floor_keeps_the_best_and_stops_the_rest_once_enough_completed():
    pool = mixed_pool(3, "even", 40, 10)
    best = int(np.argmax(pool.finals))
    run = replay(pool, "floor", {}, 3, 4, make=lambda s, m: frontier.WarmUpFloor(s, m, best, 5, 2))
    full = replay(pool, "none", {}, 3, 4)
    assert not run["best_stopped"] and run["best"] == max(pool.finals)
    # the first 5 + 4 started may train in full; every other candidate but the best is stopped at its 2nd report
    assert run["where"]["stops"] >= 40 - 5 - 4 - 1
    assert run["where"]["stopped"] >= 2 * run["where"]["stops"]  # those running when the 5th completed: later
    assert run["epochs"] < full["epochs"] == 400
    later = replay(pool, "floor", {}, 3, 4, make=lambda s, m: frontier.WarmUpFloor(s, m, best, 20, 2))
    assert later["epochs"] > run["epochs"]  # more completed curves needed: more epochs, whatever is predicted


def _fed(fallback: bool) -> tuple[frontier.ShapeInformed, list[str]]:
    pool = mixed_pool(3, "even", 40, 10)
    pruner = frontier.ShapeInformed(0, 10.0, pool.shapes, True, fallback, [], threshold=0.1, upper=1.0)
    for cid in range(30):
        for epoch in range(10):
            pruner.report(cid, float(epoch + 1), pool.values[cid][epoch])
        pruner.complete(cid, pool.values[cid][-1])
    for epoch in range(5):
        pruner.report(35, float(epoch + 1), pool.values[35][epoch])
    return pruner, pool.shapes


def test_the_informed_pruner_calibrates_on_its_own_shape_or_falls_back_while_it_has_too_few():
    pruner, shapes = _fed(False)
    pruner.should_stop(35)
    same = sum(shapes[c] == shapes[35] for c in range(30))
    assert same < 9  # too few of its shape for an 80% interval: unbounded without the fallback
    assert len(pruner._references(5.0)[1]) == same
    assert pruner.prediction(35).high == float("inf")
    pooled, _ = _fed(True)
    pooled.should_stop(35)
    assert len(pooled._references(5.0)[1]) == 30


def test_prior_curves_are_references_from_the_start_but_never_the_value_to_beat():
    pool, earlier = mixed_pool(3, "even", 20, 10), mixed_pool(1003, "even", 30, 10)
    pruner = frontier.ShapeInformed(0, 10.0, pool.shapes, False, False, [earlier], threshold=0.1, upper=1.0)
    for epoch in range(5):
        pruner.report(0, float(epoch + 1), pool.values[0][epoch])
    pruner.should_stop(0)
    assert len(pruner._references(5.0)[1]) == 30 and pruner.prediction(0).high < float("inf")
    assert pruner._completed() == {} and pruner._to_beat("0")[0] is None  # no candidate of this search completed


def test_the_checks_judge_coverage_against_the_stated_level_and_the_frontier_drops_the_dominated():
    base = [{"epochs": 100, "best": 0.9}] * 2
    runs = [{"epochs": 60, "best": 0.9, "best_stopped": False, "top_stopped": True,
             "held": {"power": [80, 100], "late": [70, 100]}}] * 2
    at_80 = frontier.measure(runs, base, 0.8)
    assert at_80["all"] and round(at_80["ratio"], 3) == 1.667 and at_80["coverage"] == 0.75
    assert not frontier.measure(runs, base, 0.9)["safe"]  # 75% is more than 10 points below 90%
    figures = {"a": {"ratio": 1.6, "best": 0.2}, "b": {"ratio": 1.4, "best": 0.0}, "c": {"ratio": 1.3, "best": 0.05},
               "d": {"ratio": 1.6, "best": 0.1}}
    assert frontier.frontier(figures) == ["d", "b"]
