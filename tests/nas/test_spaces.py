"""Every space against the contract, then what is particular to each space and to the registry."""
from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from nas.spaces import SPACES, GenomeError, get_space, space_from_config, space_to_config
from nas.spaces.cell import EDGES, OPS, CellSpace, from_arch_str, to_arch_str
from nas.spaces.chain import ChainSpace
from nas.spaces.pelee import PELEENET, PeleeSpace
from nas.testing import SpaceContract

CONFIGS = [
    {"name": "pelee"},
    {"name": "pelee", "stages": 2, "growth": [16], "gene_rate": 0.5},
    {"name": "chain"},
    {"name": "chain", "max_layers": 3, "min_layers": 2, "modules": 2},
    {"name": "chain", "max_layers": 1},
    {"name": "cell"},
    {"name": "cell", "cells_per_stage": 5, "stages": 3, "channels": 32},
]


@pytest.fixture(params=CONFIGS, ids=lambda c: "-".join(f"{v}" for v in c.values()))
def space(request):
    return space_from_config(request.param)


def _pelee_broken(space: PeleeSpace, g: dict) -> list:
    stages = g["stages"]
    last = len(stages) - 1
    return [
        ({"stages": stages[:-1]}, "stages"),
        ({"stages": stages + [stages[0]]}, "stages"),
        ({"stages": {"0": stages[0]}}, "stages"),
        ({"stages": [[2, 3]] + stages[1:]}, "stages[0]"),
        ({"stages": [(2, 3, 32)] + stages[1:]}, "stages[0]"),
        ({"stages": stages[:last] + [[3, 3, space.growth[0]]]}, f"stages[{last}][0]"),
        ({"stages": stages[:last] + [[1, space.layers[1] + 2, space.growth[0]]]}, f"stages[{last}][1]"),
        ({"stages": stages[:last] + [[1, 0, space.growth[0]]]}, f"stages[{last}][1]"),
        ({"stages": stages[:last] + [[1, np.int64(3), space.growth[0]]]}, f"stages[{last}][1]"),
        ({"stages": stages[:last] + [[1, 3, 24]]}, f"stages[{last}][2]"),
    ]


def _chain_broken(space: ChainSpace, g: dict) -> list:
    layer = {"kernel": 3, "filters": 16}

    def first(bad) -> dict:  # a module of the shortest allowed length whose first layer is ``bad``
        return {"layers": [bad] + [layer] * (space.min_layers - 1)}

    return [
        ({"layers": []}, "layers"),
        ({"layers": [layer] * (space.max_layers + 1)}, "layers"),
        ({"layers": layer}, "layers"),
        (first([3, 16]), "layers[0]"),
        (first({"kernel": 3}), "layers[0].filters"),
        (first({**layer, "stride": 2}), "layers[0].stride"),
        (first({"kernel": 7, "filters": 16}), "layers[0].kernel"),
        (first({"kernel": 3, "filters": 48}), "layers[0].filters"),
    ]


def _cell_broken(space: CellSpace, g: dict) -> list:
    edges = g["edges"]
    return [
        ({"edges": dict.fromkeys(EDGES, "none")}, "edges"),
        ({"edges": {**edges, "3<-0": "none", "3<-1": "none", "3<-2": "none"}}, "edges"),
        ({"edges": {**edges, "1<-0": "none", "2<-0": "none", "3<-0": "none"}}, "edges"),
        ({"edges": {e: op for e, op in edges.items() if e != "3<-2"}}, "edges.3<-2"),
        ({"edges": {**edges, "4<-0": "conv_3x3"}}, "edges.4<-0"),
        ({"edges": {**edges, "2<-1": "conv_7x7"}}, "edges.2<-1"),
        ({"edges": [edges[e] for e in EDGES]}, "edges"),
    ]


@pytest.fixture
def broken_genomes(space):
    genome = space.sample(np.random.default_rng(1))
    return {"pelee": _pelee_broken, "chain": _chain_broken, "cell": _cell_broken}[space.name](space, genome)


class TestSpaceContract(SpaceContract):
    pass


# --- pelee ---------------------------------------------------------------------------------------------------


def test_peleenet_is_a_point_of_the_default_space():
    space = PeleeSpace()
    assert space.validate(PELEENET) is PELEENET
    assert space.describe(PELEENET) == "4 stages: 2x3@32 | 2x4@32 | 2x8@32 | 2x6@32"
    assert list(space.flatten(PELEENET))[:4] == ["s1_ways", "s1_layers", "s1_growth", "s2_ways"]
    assert space.flatten(PELEENET)["s3_layers"] == 8


def test_pelee_error_names_field_value_and_range():
    genome = {"stages": [[2, 3, 32], [2, 4, 32], [2, 12, 32], [2, 6, 32]]}
    with pytest.raises(GenomeError) as info:
        PeleeSpace().validate(genome)
    assert str(info.value) == "`stages[2][1]` = 12 is not allowed; expected an integer in [1, 10]"
    assert (info.value.field, info.value.value) == ("stages[2][1]", 12)


def test_pelee_rejects_a_bool_for_an_int():
    with pytest.raises(GenomeError, match=r"`stages\[0\]\[0\]` = True"):
        PeleeSpace().validate({"stages": [[True, 3, 32], [2, 4, 32], [2, 8, 32], [2, 6, 32]]})


def test_pelee_mutation_changes_one_to_two_genes_on_average():
    space, rng = PeleeSpace(), np.random.default_rng(0)
    flat = lambda g: sum(g["stages"], [])  # noqa: E731
    changed = [sum(x != y for x, y in zip(flat(PELEENET), flat(space.mutate(PELEENET, rng)))) for _ in range(2000)]
    assert min(changed) >= 1 and 1.0 <= np.mean(changed) <= 2.0


def test_pelee_gene_rate_one_changes_every_gene():
    child = PeleeSpace(gene_rate=1.0).mutate(PELEENET, np.random.default_rng(0))
    assert all(x != y for x, y in zip(sum(child["stages"], []), sum(PELEENET["stages"], [])))


def test_pelee_spec_size_and_genes():
    spec = PeleeSpace().spec()
    assert spec["size"] == (2 * 10 * 3) ** 4
    assert spec["genes"]["layers"] == {"low": 1, "high": 10}


@pytest.mark.parametrize(
    "params, needle",
    [
        ({"stages": 0}, "`stages` must be an integer >= 1 (stages=0)"),
        ({"stages": 2.0}, "(stages=2.0)"),
        ({"ways": [3]}, "`ways` may only contain 1, 2 (ways=[3])"),
        ({"ways": [1, 1]}, "distinct"),
        ({"layers": [5, 2]}, "`layers` must be a pair [low, high]"),
        ({"layers": [0, 2]}, "(layers=[0, 2])"),
        ({"growth": []}, "`growth` must be a non-empty list"),
        ({"gene_rate": 0}, "`gene_rate` must be None or a probability in (0, 1] (gene_rate=0)"),
        ({"ways": [2], "layers": [3, 3], "growth": [16]}, "one genome"),
    ],
)
def test_pelee_constructor_checks(params, needle):
    with pytest.raises(ValueError) as info:
        PeleeSpace(**params)
    assert needle in str(info.value)


# --- chain ---------------------------------------------------------------------------------------------------


def test_chain_mutation_appends_a_layer():
    space, rng = ChainSpace(max_layers=4), np.random.default_rng(0)
    genome = {"layers": [{"kernel": 3, "filters": 16}]}
    for length in range(2, 5):
        child = space.mutate(genome, rng)
        assert len(child["layers"]) == length and child["layers"][:-1] == genome["layers"]
        genome = child


def test_chain_mutation_at_max_length_changes_one_layer():
    space, rng = ChainSpace(max_layers=3), np.random.default_rng(0)
    genome = {"layers": [{"kernel": 3, "filters": 16}] * 3}
    for _ in range(50):
        child = space.mutate(genome, rng)
        assert len(child["layers"]) == 3
        assert sum(x != y for x, y in zip(child["layers"], genome["layers"])) == 1


def test_chain_unequal_parents_are_each_mutated():
    space = ChainSpace()
    a, b = space.sample(np.random.default_rng(1)), {"layers": [{"kernel": 5, "filters": 128}]}
    assert len(a["layers"]) != 1
    children = space.crossover(a, b, np.random.default_rng(3))
    rng = np.random.default_rng(3)
    assert children == (space.mutate(a, rng), space.mutate(b, rng))


def test_chain_equal_parents_swap_tails_at_one_cut():
    space, rng = ChainSpace(), np.random.default_rng(0)
    a = {"layers": [{"kernel": 3, "filters": 16}] * 5}
    b = {"layers": [{"kernel": 5, "filters": 128}] * 5}
    for _ in range(20):
        first, second = space.crossover(a, b, rng)
        cut = next(i for i, layer in enumerate(first["layers"]) if layer != a["layers"][0])
        assert 1 <= cut <= 4
        assert first["layers"] == a["layers"][:cut] + b["layers"][cut:]
        assert second["layers"] == b["layers"][:cut] + a["layers"][cut:]


def test_chain_never_grows_past_max_layers():
    space, rng = ChainSpace(max_layers=5), np.random.default_rng(0)
    population = [space.sample(rng) for _ in range(10)]
    for _ in range(300):
        i, j = rng.integers(len(population), size=2)
        children = space.crossover(population[i], population[j], rng)
        population[i], population[j] = (space.mutate(child, rng) for child in children)
        assert all(1 <= len(g["layers"]) <= 5 for g in population)


def test_chain_flatten_pads_absent_layers():
    row = ChainSpace(max_layers=3).flatten({"layers": [{"kernel": 5, "filters": 64}]})
    assert row == {"n_layers": 1, "l1_kernel": 5, "l1_filters": 64, "l2_kernel": "", "l2_filters": "",
                   "l3_kernel": "", "l3_filters": ""}


def test_chain_spec_states_modules_and_reductions():
    spec = ChainSpace(max_layers=2, modules=3).spec()
    assert spec["size"] == 8 + 8**2 and spec["modules"] == 3 and spec["reductions"] == 2
    assert "1x1 conv doubling the filters" in spec["description"] and "max-pool" in spec["description"]


def test_chain_constructor_checks():
    with pytest.raises(ValueError, match=r"\(min_layers=4, max_layers=3\)"):
        ChainSpace(max_layers=3, min_layers=4)
    with pytest.raises(ValueError, match=r"`modules` must be an integer >= 1 \(modules=0\)"):
        ChainSpace(modules=0)


# --- cell ----------------------------------------------------------------------------------------------------


def test_cell_rejects_a_disconnected_cell_with_a_clear_message():
    edges = {**dict.fromkeys(EDGES, "conv_3x3"), "3<-0": "none", "3<-1": "none", "3<-2": "none"}
    with pytest.raises(GenomeError) as info:
        CellSpace().validate({"edges": edges})
    assert info.value.field == "edges"
    assert "every path is cut by a 'none' edge" in str(info.value)


def test_cell_connected_count_matches_path_enumeration():
    paths = [("3<-0",), ("1<-0", "3<-1"), ("2<-0", "3<-2"), ("1<-0", "2<-1", "3<-2")]
    connected = sum(
        any(all(cell[EDGES.index(e)] != "none" for e in path) for path in paths)
        for cell in itertools.product(OPS, repeat=6)
    )
    assert CellSpace().spec()["size"] == connected < 5**6


def test_cell_mutation_changes_exactly_one_edge():
    space, rng = CellSpace(), np.random.default_rng(0)
    genome = space.sample(rng)
    for _ in range(50):
        child = space.mutate(genome, rng)
        assert sum(child["edges"][e] != genome["edges"][e] for e in EDGES) == 1
        genome = child


def test_cell_crossover_of_sparse_parents_stays_connected():
    space = CellSpace()
    a = {"edges": {**dict.fromkeys(EDGES, "none"), "3<-0": "conv_3x3", "2<-0": "avg_pool_3x3"}}
    b = {"edges": {**dict.fromkeys(EDGES, "none"), "1<-0": "conv_1x1", "3<-1": "skip_connect"}}
    seen = set()
    for seed in range(100):
        children = space.crossover(a, b, np.random.default_rng(seed))
        for child in children:
            space.validate(child)
            seen.add(space.key(child))
    # the only masks that keep both connected take 3<-0, 1<-0 and 3<-1 together; 2<-0 (a dead end) still mixes
    assert len(seen) == 4


def test_cell_arch_string_round_trip():
    genome = CellSpace().sample(np.random.default_rng(0))
    text = to_arch_str(genome)
    assert text.count("+") == 2 and text.startswith("|") and text.endswith("|")
    assert from_arch_str(text) == genome
    assert CellSpace().describe(genome) == text


# --- registry ------------------------------------------------------------------------------------------------


def test_registry_holds_the_three_spaces():
    assert sorted(SPACES) == ["cell", "chain", "pelee"]
    assert all(SPACES[name].name == name for name in SPACES)


def test_get_space_unknown_name_lists_known_names():
    with pytest.raises(ValueError, match="Unknown search space 'resnet'; the known spaces are cell, chain, pelee"):
        get_space("resnet")


def test_get_space_unknown_param_lists_the_parameters():
    with pytest.raises(ValueError) as info:
        get_space("chain", max_layer=4)
    assert "'max_layer'" in str(info.value) and "max_layers, min_layers, modules" in str(info.value)


def test_get_space_bad_value_is_a_value_error():
    with pytest.raises(ValueError, match=r"max_layers=-1"):
        get_space("chain", max_layers=-1)


@pytest.mark.parametrize("config", CONFIGS)
def test_config_round_trip(config):
    space = space_from_config(config)
    assert space_from_config(json.loads(json.dumps(space_to_config(space)))) == space


@pytest.mark.parametrize("config", [None, [], {}, {"name": 3}, {"stages": 4}])
def test_space_from_config_rejects_malformed_configs(config):
    with pytest.raises(ValueError, match="A space config must be a dict with a string `name`"):
        space_from_config(config)
