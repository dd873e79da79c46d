"""Property tests of the gene operators: children hold only parent genes, and nothing is modified."""
from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nas.operators.crossover import one_point_crossover, swap_where, uniform_crossover
from nas.operators.mutation import choose, mutation_mask, replace_at, resample_gene, resample_genes

FAST = settings(max_examples=60, deadline=None)
seeds = st.integers(0, 2**32 - 1)
genes = st.one_of(st.integers(-5, 5), st.sampled_from(["a", "b", "c"]), st.lists(st.integers(0, 3), max_size=3))


@st.composite
def parent_pairs(draw):
    n = draw(st.integers(0, 12))
    return draw(st.lists(genes, min_size=n, max_size=n)), draw(st.lists(genes, min_size=n, max_size=n))


def _ids(data) -> set[int]:
    return {id(x) for x in data if isinstance(x, list)} | ({id(data)} if isinstance(data, list) else set())


@FAST
@given(parent_pairs(), seeds, st.sampled_from([one_point_crossover, uniform_crossover]))
def test_crossover_children_are_made_of_parent_genes(parents, seed, crossover):
    a, b = parents
    before = copy.deepcopy(parents)
    first, second = crossover(a, b, np.random.default_rng(seed))
    assert (a, b) == before
    assert len(first) == len(second) == len(a)
    for i in range(len(a)):
        assert sorted(map(repr, (first[i], second[i]))) == sorted(map(repr, (a[i], b[i])))
    assert not (_ids(first) | _ids(second)) & (_ids(a) | _ids(b))
    assert crossover(a, b, np.random.default_rng(seed)) == (first, second)


@FAST
@given(parent_pairs(), seeds)
def test_one_point_crossover_swaps_one_tail(parents, seed):
    a, b = parents
    first, _ = one_point_crossover(a, b, np.random.default_rng(seed))
    if len(a) < 2:
        assert first == a
    else:
        assert any(first == a[:cut] + b[cut:] for cut in range(1, len(a)))


def test_crossover_rejects_unequal_lengths():
    with pytest.raises(ValueError, match=r"len\(a\)=2, len\(b\)=3"):
        one_point_crossover([1, 2], [1, 2, 3], np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"len\(mask\)=1"):
        swap_where([1, 2], [3, 4], [True])


@FAST
@given(st.lists(st.integers(0, 9), min_size=2, max_size=10, unique=True), seeds)
def test_resample_gene_returns_another_choice(choices, seed):
    current = choices[0]
    value = resample_gene(choices, current, np.random.default_rng(seed))
    assert value in choices and value != current
    assert type(value) is int  # a Python int, never a numpy scalar
    assert resample_gene(choices, current, np.random.default_rng(seed)) == value


def test_resample_gene_with_one_choice_is_an_error():
    with pytest.raises(ValueError, match="single choice"):
        resample_gene([3], 3, np.random.default_rng(0))


@FAST
@given(st.integers(0, 20), st.floats(0.0, 1.0), seeds)
def test_mutation_mask_marks_at_least_one(n, rate, seed):
    mask = mutation_mask(n, rate, np.random.default_rng(seed))
    assert len(mask) == n and (n == 0 or any(mask))
    assert mask == mutation_mask(n, rate, np.random.default_rng(seed))


@FAST
@given(st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=4, unique=True), min_size=1, max_size=12),
       st.floats(0.01, 1.0), seeds)
def test_resample_genes_changes_only_mutable_genes(choices, rate, seed):
    if all(len(options) == 1 for options in choices):
        with pytest.raises(ValueError, match="No gene has more than one choice"):
            resample_genes([c[0] for c in choices], choices, rate, np.random.default_rng(seed))
        return
    parent = [options[0] for options in choices]
    before = list(parent)
    child = resample_genes(parent, choices, rate, np.random.default_rng(seed))
    assert parent == before and len(child) == len(parent)
    assert child != parent
    assert all(value in options for value, options in zip(child, choices))
    assert all(c == p for c, p, options in zip(child, parent, choices) if len(options) == 1)
    assert resample_genes(parent, choices, rate, np.random.default_rng(seed)) == child


@FAST
@given(st.lists(st.lists(st.integers()), min_size=1, max_size=6), st.data())
def test_replace_at_copies(seq, data):
    index = data.draw(st.integers(0, len(seq) - 1))
    before = copy.deepcopy(seq)
    value = [99]
    child = replace_at(seq, index, value)
    assert seq == before and child[index] == value and child[index] is not value
    assert child[:index] + child[index + 1:] == seq[:index] + seq[index + 1:]
    assert not _ids(child) & _ids(seq)


def test_choose_copies_and_rejects_empty():
    options = [{"kernel": 3}]
    picked = choose(options, np.random.default_rng(0))
    assert picked == options[0] and picked is not options[0]
    with pytest.raises(ValueError, match="`choices` must not be empty"):
        choose([], np.random.default_rng(0))
