"""The pure part of one-shot search: paths drawn from (seed, step), the spaces a supernet holds, the path
search loop and the ranking statistic."""
from __future__ import annotations

import math

import pytest
from scipy import stats

from nas.oneshot import (check_supernet_space, kendall_tau, path_for_step, probe_paths, random_paths,
                         ranking_summary, search_paths, supernet_support, tau_interval)
from nas.spaces import get_space
from nas.strategies import get_strategy

SPACE = get_space("cell", cells_per_stage=1, stages=2, channels=8)


def test_the_path_of_a_step_depends_on_seed_and_step_alone():
    assert path_for_step(SPACE, 3, 17) == path_for_step(SPACE, 3, 17)
    paths = [path_for_step(SPACE, 3, step) for step in range(40)]
    assert all(SPACE.validate(p) for p in paths)
    assert len({SPACE.key(p) for p in paths}) > 30  # uniform over ~12,000 cells: few repeats
    assert [path_for_step(SPACE, 4, step) for step in range(40)] != paths
    assert probe_paths(SPACE, 3, 2, 4) == probe_paths(SPACE, 3, 2, 4) != probe_paths(SPACE, 3, 3, 4)
    with pytest.raises(ValueError, match="integers >= 0"):
        path_for_step(SPACE, -1, 0)


def test_random_paths_are_distinct_and_seeded():
    paths = random_paths(SPACE, 5, 25)
    assert len({SPACE.key(p) for p in paths}) == 25 and paths == random_paths(SPACE, 5, 25)


def test_only_the_cell_space_is_held_and_the_others_say_why():
    assert supernet_support(SPACE) is None and supernet_support("cell") is None
    for name in ("chain", "pelee"):
        reason = supernet_support(name)
        assert reason.startswith(f"A supernet cannot hold the '{name}' space") and "cell" in reason
        with pytest.raises(ValueError, match="width"):
            check_supernet_space(get_space(name))


def test_kendall_tau_matches_known_values():
    assert kendall_tau([1, 2, 3, 4, 5], [1, 2, 3, 4, 5]) == 1.0
    assert kendall_tau([1, 2, 3, 4, 5], [5, 4, 3, 2, 1]) == -1.0
    # 10 pairs: 8 concordant, 2 discordant -> 0.6
    assert kendall_tau([1, 2, 3, 4, 5], [1, 3, 2, 5, 4]) == pytest.approx(0.6)
    assert math.isnan(kendall_tau([1, 1, 1], [1, 2, 3]))
    x = [0.1, 0.4, 0.4, 0.9, 0.3, 0.7, 0.7, 0.2]
    y = [1, 3, 2, 8, 2, 5, 9, 1]
    assert kendall_tau(x, y) == pytest.approx(stats.kendalltau(x, y).statistic)  # tau-b with ties
    with pytest.raises(ValueError, match="same length"):
        kendall_tau([1, 2], [1])


def test_the_interval_is_fieller_hartley_pearsons():
    low, high = tau_interval(0.5, 24)
    half = 1.959963984540054 * math.sqrt(0.437 / 20)
    assert (low, high) == pytest.approx((math.tanh(math.atanh(0.5) - half), math.tanh(math.atanh(0.5) + half)))
    assert low < 0.5 < high and tau_interval(0.5, 200)[0] > low  # narrower with more pairs
    assert tau_interval(1.0, 20)[1] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least 5"):
        tau_interval(0.5, 4)
    summary = ranking_summary([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 6, 5])
    assert summary["n"] == 6 and summary["low"] < summary["tau"] < summary["high"] and "Fieller" in summary["method"]


def test_search_paths_runs_a_strategy_on_scores():
    strategy = get_strategy("regularized", SPACE, seed=1, population=6, sample_size=2, max_evaluations=30)
    seen = []

    def score(paths):  # more conv_3x3 edges score higher
        return [sum(op == "conv_3x3" for op in p["edges"].values()) / 6 for p in paths]

    search_paths(strategy, score, batch=4, on_result=lambda i, p, s: seen.append(s))
    assert strategy.done and len(seen) == 30
    assert strategy.best(1)[0][1].fitness == max(seen)
