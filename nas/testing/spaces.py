"""The contract every search space passes, in the style of optuna's ``optuna/testing/pytest_samplers.py``.

A test module joins it by subclassing :class:`SpaceContract` and providing two pytest fixtures:

- ``space``: the :class:`~nas.spaces.base.SearchSpace` under test (parametrize it to cover several);
- ``broken_genomes``: hand-picked ``(genome, field)`` pairs that ``space.validate`` must reject with a
  :class:`~nas.spaces.base.GenomeError` whose ``field`` is ``field``.

On top of those, every leaf of sampled genomes is corrupted generically (wrong type, bool, out of range), and
keys are removed and added. The contract assumes genomes are dicts at the top level and that ``mutate`` always
returns a different genome. It imports no pytest, so ``nas`` keeps to the standard library and numpy.
"""
from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import numpy as np

from nas.spaces.base import Genome, GenomeError, SearchSpace, canonical_json

#: Draws per check: enough to reach the edge cases of small spaces, cheap for any of ours.
DRAWS = 60


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def genomes(space: SearchSpace, seed: int = 0, n: int = DRAWS) -> Iterator[Genome]:
    """Samples, mutants and crossover children, so every operator's output is covered."""
    rng = _rng(seed)
    for _ in range(n):
        a, b = space.sample(rng), space.sample(rng)
        yield a
        yield space.mutate(a, rng)
        yield from space.crossover(a, b, rng)
        yield from space.crossover(a, space.mutate(a, rng), rng)


def expect_genome_error(space: SearchSpace, genome: Any) -> GenomeError:
    """The :class:`GenomeError` that ``space.validate(genome)`` raises; fails if it raises none or another."""
    try:
        space.validate(genome)
    except GenomeError as error:
        return error
    raise AssertionError(f"{space!r}.validate accepted a broken genome: {genome!r}")


def _containers(data: Any) -> Iterator[Any]:
    if isinstance(data, (dict, list)):
        yield data
        for item in data.values() if isinstance(data, dict) else data:
            yield from _containers(item)


def _leaves(data: Any, path: str = "") -> Iterator[tuple[str, tuple[Any, ...]]]:
    """``(field path, key path)`` of every scalar, with the contract's path notation (``a[1].b``)."""
    if isinstance(data, dict):
        for key, value in data.items():
            for field, keys in _leaves(value, f"{path}.{key}" if path else str(key)):
                yield field, (key, *keys)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            for field, keys in _leaves(value, f"{path}[{i}]"):
                yield field, (i, *keys)
    else:
        yield path, ()


def _replaced(data: Any, keys: tuple[Any, ...], value: Any) -> Any:
    copied = copy.deepcopy(data)
    target = copied
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = value
    return copied


def _value_at(data: Any, keys: tuple[Any, ...]) -> Any:
    for key in keys:
        data = data[key]
    return data


def _assert_plain_json(data: Any) -> None:
    if isinstance(data, dict):
        assert all(isinstance(key, str) for key in data), f"non-string key in {data!r}"
        for value in data.values():
            _assert_plain_json(value)
    elif isinstance(data, list):
        for value in data:
            _assert_plain_json(value)
    else:
        assert type(data) in (int, float, str, bool, type(None)), f"{data!r} is a {type(data).__name__}, not JSON data"


class SpaceContract:
    """Checks for any :class:`SearchSpace`; subclass it in a test module that provides ``space`` and
    ``broken_genomes`` fixtures."""

    def test_sample_is_deterministic_by_seed(self, space: SearchSpace) -> None:
        assert list(genomes(space, seed=7, n=10)) == list(genomes(space, seed=7, n=10))

    def test_sample_varies(self, space: SearchSpace) -> None:
        rng = _rng()
        assert len({space.key(space.sample(rng)) for _ in range(DRAWS)}) > 1

    def test_operators_return_valid_genomes(self, space: SearchSpace) -> None:
        for genome in genomes(space):
            assert space.validate(genome) == genome

    def test_crossover_returns_two_children(self, space: SearchSpace) -> None:
        rng = _rng()
        children = space.crossover(space.sample(rng), space.sample(rng), rng)
        assert isinstance(children, tuple) and len(children) == 2

    def test_genomes_are_plain_json(self, space: SearchSpace) -> None:
        for genome in genomes(space):
            _assert_plain_json(genome)
            again = json.loads(json.dumps(genome))
            assert again == genome and space.key(again) == space.key(genome)

    def test_operators_leave_inputs_untouched(self, space: SearchSpace) -> None:
        rng = _rng()
        for _ in range(DRAWS):
            a, b = space.sample(rng), space.sample(rng)
            before = copy.deepcopy((a, b))
            children = [space.mutate(a, rng), *space.crossover(a, b, rng), *space.crossover(a, a, rng)]
            assert (a, b) == before
            parents = {id(c) for c in [*_containers(a), *_containers(b)]}
            for child in children:  # a child that shares a list with a parent would change it when edited
                assert not parents & {id(c) for c in _containers(child)}

    def test_mutate_changes_the_genome(self, space: SearchSpace) -> None:
        rng = _rng()
        for genome in genomes(space, n=DRAWS // 3):
            assert space.mutate(genome, rng) != genome

    def test_key_is_stable_and_distinguishes(self, space: SearchSpace) -> None:
        seen: dict[str, str] = {}
        for genome in genomes(space):
            key = space.key(genome)
            assert key == space.key(copy.deepcopy(genome)) == space.key(json.loads(json.dumps(genome)))
            reordered = dict(reversed(list(genome.items())))
            assert space.key(reordered) == key
            assert seen.setdefault(key, canonical_json(genome)) == canonical_json(genome), "two genomes share a key"

    def test_describe_is_one_line(self, space: SearchSpace) -> None:
        for genome in genomes(space, n=10):
            text = space.describe(genome)
            assert isinstance(text, str) and text.strip() and "\n" not in text

    def test_flatten_has_fixed_scalar_columns(self, space: SearchSpace) -> None:
        columns = None
        for genome in genomes(space):
            row = space.flatten(genome)
            assert all(type(value) in (int, float, str) for value in row.values()), row
            assert columns is None or list(row) == columns, f"{list(row)} != {columns}"
            columns = list(row)

    def test_spec_is_json(self, space: SearchSpace) -> None:
        spec = json.loads(json.dumps(space.spec()))
        assert spec["name"] == space.name
        assert isinstance(spec["description"], str) and spec["description"]
        assert spec["params"] == json.loads(json.dumps(space.params()))
        assert "size" not in spec or (type(spec["size"]) is int and spec["size"] > 0)

    def test_params_round_trip(self, space: SearchSpace) -> None:
        rebuilt = type(space)(**json.loads(json.dumps(space.params())))
        assert rebuilt == space and hash(rebuilt) == hash(space)
        assert list(genomes(rebuilt, n=5)) == list(genomes(space, n=5))

    def test_broken_genomes_are_rejected(self, space: SearchSpace, broken_genomes: list[tuple[Any, str]]) -> None:
        for genome, field in broken_genomes:
            error = expect_genome_error(space, genome)
            assert error.field == field and f"`{field}`" in str(error), (genome, str(error))

    def test_non_dicts_are_rejected(self, space: SearchSpace) -> None:
        for genome in (None, 0, "genome", [], True, 1.5):
            assert expect_genome_error(space, genome).field == "genome"

    def test_missing_and_extra_keys_are_rejected(self, space: SearchSpace) -> None:
        genome = space.sample(_rng())
        for key in genome:
            missing = {k: v for k, v in genome.items() if k != key}
            assert key in str(expect_genome_error(space, missing))
        assert "bogus" in str(expect_genome_error(space, {**genome, "bogus": 1}))

    def test_corrupted_leaves_are_rejected(self, space: SearchSpace) -> None:
        """Every scalar, replaced by a wrong type, a bool or a value out of range, is named in the error."""
        for genome in genomes(space, n=3):
            for field, keys in _leaves(genome):
                value = _value_at(genome, keys)
                out_of_range = "bogus" if isinstance(value, str) else 10**6
                for bad in (None, True, 1.5, [], {}, out_of_range, f"{value}x"):
                    error = expect_genome_error(space, _replaced(genome, keys, bad))
                    assert error.field == field and f"`{field}`" in str(error), (bad, str(error))

    def test_decisions_compose_and_decompose_every_genome(self, space: SearchSpace) -> None:
        """The decision view (what ``reinforce`` and ``tpe`` search through): every genome is its decisions'
        choices, asked in order, named after its flatten columns; any choices make a valid genome or ``None``."""
        decisions = {decision.name: decision for decision in space.decisions()}
        assert len(decisions) == len(space.decisions()) and set(decisions) <= set(space.flatten(space.sample(_rng())))
        for decision in decisions.values():
            _assert_plain_json(list(decision.choices))
            assert len(set(decision.choices)) == len(decision.choices) >= 1, decision
            assert not decision.ordered or list(decision.choices) == list(
                range(decision.choices[0], decision.choices[0] + len(decision.choices))), decision
        for genome in genomes(space):
            chosen = space.decompose(genome)
            assert all(chosen[name] in decisions[name].choices for name in chosen), chosen
            asked: list[str] = []
            assert space.compose(lambda d: asked.append(d.name) or chosen[d.name]) == genome
            assert asked == list(chosen), "compose asked other decisions than decompose names, or in another order"
        rng, made = _rng(), 0
        for _ in range(DRAWS):
            genome = space.compose(lambda d: d.choices[int(rng.integers(len(d.choices)))])
            if genome is not None:
                made += 1
                assert space.validate(genome) == genome
                _assert_plain_json(genome)
        assert made > DRAWS // 2, "uniform choices rarely make a genome: a policy over them would mostly waste draws"
