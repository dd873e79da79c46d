"""Property tests of the selection operators: roulette, tournament, aging, non-dominated sorting, crowding."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nas.operators.selection import (
    crowding_distance,
    dominates,
    non_dominated_sort,
    oldest,
    pareto_front,
    roulette_wheel,
    tournament,
)

FAST = settings(max_examples=80, deadline=None)
seeds = st.integers(0, 2**32 - 1)
finite = st.floats(-1e6, 1e6, allow_nan=False)
scores = st.lists(st.one_of(finite, st.just(-math.inf)), min_size=1, max_size=30)


@st.composite
def objective_rows(draw, max_rows: int = 25):
    width = draw(st.integers(1, 3))
    value = st.one_of(st.integers(-5, 5).map(float), st.just(-math.inf))  # small ints: many ties and dominations
    row = st.lists(value, min_size=width, max_size=width)
    return draw(st.lists(row, min_size=0, max_size=max_rows))


@FAST
@given(scores, st.integers(0, 20), seeds)
def test_roulette_never_picks_a_failure_while_a_finite_score_exists(values, k, seed):
    picks = roulette_wheel(values, k, np.random.default_rng(seed))
    assert len(picks) == k and all(type(i) is int and 0 <= i < len(values) for i in picks)
    if any(math.isfinite(v) for v in values):
        assert all(math.isfinite(values[i]) for i in picks)


@FAST
@given(st.lists(st.floats(-10, 10), min_size=2, max_size=10), seeds)
def test_roulette_with_negative_scores_never_picks_the_worst_of_unequal_scores(values, seed):
    picks = roulette_wheel(values, 50, np.random.default_rng(seed))
    if min(values) < 0 and max(values) > min(values):
        assert all(values[i] > min(values) for i in picks)


def test_roulette_is_proportional_to_non_negative_fitness():
    picks = roulette_wheel([0.0, 1.0, 3.0], 40_000, np.random.default_rng(0))
    counts = np.bincount(picks, minlength=3) / 40_000
    assert counts[0] == 0 and abs(counts[1] - 0.25) < 0.01 and abs(counts[2] - 0.75) < 0.01


@pytest.mark.parametrize("values", [[0.0, 0.0, 0.0], [-2.0, -2.0], [5.0, 5.0, 5.0, -math.inf]])
def test_roulette_of_equal_scores_is_uniform_over_the_finite_ones(values):
    picks = roulette_wheel(values, 3_000, np.random.default_rng(1))
    counts = np.bincount(picks, minlength=len(values))
    expected = 3_000 / sum(math.isfinite(v) for v in values)
    assert all(abs(c - expected) < 0.1 * expected if math.isfinite(v) else c == 0 for c, v in zip(counts, values))


def test_roulette_of_only_failures_is_uniform_and_bad_input_is_refused():
    assert set(roulette_wheel([-math.inf] * 3, 200, np.random.default_rng(2))) == {0, 1, 2}
    with pytest.raises(ValueError, match="`scores`"):
        roulette_wheel([], 1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="`k`"):
        roulette_wheel([1.0], -1, np.random.default_rng(0))


@FAST
@given(scores, st.integers(1, 40), seeds)
def test_tournament_winner_is_the_best_of_its_sample(values, size, seed):
    winner = tournament(values, size, np.random.default_rng(seed))
    entrants = np.random.default_rng(seed).choice(len(values), size=min(size, len(values)), replace=False)
    assert type(winner) is int and winner in entrants
    assert values[winner] == max(values[i] for i in entrants)
    if size >= len(values):
        assert values[winner] == max(values)


def test_tournament_compares_tuples_and_refuses_bad_input():
    assert tournament([(0, 1.0), (0, math.inf), (-1, math.inf)], 3, np.random.default_rng(0)) == 1
    with pytest.raises(ValueError, match="`size`"):
        tournament([1.0], 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="`scores`"):
        tournament([], 2, np.random.default_rng(0))


@FAST
@given(st.lists(st.integers(0, 100), min_size=1, max_size=20))
def test_oldest_is_the_first_earliest_birth(births):
    index = oldest(births)
    assert births[index] == min(births) and index == births.index(min(births))


@FAST
@given(objective_rows())
def test_non_dominated_sort_partitions_rows_into_ordered_fronts(rows):
    fronts = non_dominated_sort(rows)
    assert sorted(i for front in fronts for i in front) == list(range(len(rows)))
    assert all(front == sorted(front) and front for front in fronts)
    for rank, front in enumerate(fronts):
        for i in front:
            for j in front:
                assert not dominates(rows[i], rows[j])  # mutually non-dominated
            if rank:  # every later row is dominated by some row of the front before it
                assert any(dominates(rows[j], rows[i]) for j in fronts[rank - 1])
    assert pareto_front(rows) == (fronts[0] if fronts else [])


def test_failed_rows_come_last():
    rows = [[-math.inf, -math.inf], [1.0, -5.0], [0.0, 0.0], [-math.inf, -math.inf]]
    assert non_dominated_sort(rows) == [[1, 2], [0, 3]]


@FAST
@given(objective_rows(max_rows=12))
def test_crowding_distance_is_infinite_at_the_ends(rows):
    distances = crowding_distance(rows)
    assert len(distances) == len(rows) and all(d >= 0 for d in distances)
    if len(rows) <= 2:
        assert all(d == math.inf for d in distances)
    for m in range(len(rows[0]) if rows else 0):
        values = [row[m] for row in rows]
        assert any(distances[i] == math.inf for i, v in enumerate(values) if v == min(values))
        assert any(distances[i] == math.inf for i, v in enumerate(values) if v == max(values))


def test_crowding_distance_of_a_line():
    assert crowding_distance([[0.0, 4.0], [1.0, 3.0], [3.0, 1.0], [4.0, 0.0]]) == [math.inf, 1.5, 1.5, math.inf]
