"""The stage scheduler (seed 002): the DP against brute force, the baselines, the limits, bad graphs."""
from __future__ import annotations

import numpy as np
import pytest

from nas.schedule import (
    MERGED,
    GraphError,
    ModelledCost,
    Op,
    OpGraph,
    RandomCost,
    Schedule,
    ScheduleError,
    SearchStats,
    Stage,
    brute_force_schedule,
    greedy_schedule,
    optimal_schedule,
    random_schedule,
    sequential_schedule,
)
from nas.schedule.search import blocks


def random_dag(rng: np.random.Generator, n: int, density: float) -> OpGraph:
    """``n`` operators in a random order, each reading earlier ones with probability ``density``; about half
    share merge groups (two kinds over the operators' first input)."""
    ops = []
    for i in range(n):
        inputs = tuple(f"op{j}" for j in range(i) if rng.random() < density)
        kind = str(rng.choice(["conv", "pool"]))
        group = f"{kind}@{inputs[0] if inputs else 'x'}" if rng.random() < 0.6 else ""
        ops.append(Op(f"op{i}", inputs, kind=kind, merge_group=group, work=float(rng.uniform(0.1, 4.0))))
    order = rng.permutation(n)  # the graph must not depend on the order it is given in
    return OpGraph([ops[i] for i in order])


def cost_models(seed: int):
    return [RandomCost(seed), ModelledCost(peak=4.0, lanes=4, launch=0.3), ModelledCost(lanes=2, batch=8)]


@pytest.mark.parametrize("seed", range(12))
def test_dp_equals_brute_force_and_beats_the_baselines(seed):
    rng = np.random.default_rng(seed)
    n = 8 if seed < 3 else int(rng.integers(1, 8))
    graph = random_dag(rng, n, density=float(rng.uniform(0.15, 0.6)))
    for cost in cost_models(seed):
        optimal = optimal_schedule(graph, cost).check(graph)
        brute = brute_force_schedule(graph, cost).check(graph)
        assert optimal.cost == pytest.approx(brute.cost, rel=1e-12)
        assert optimal.cost <= greedy_schedule(graph, cost).check(graph).cost + 1e-12
        assert optimal.cost <= sequential_schedule(graph, cost).check(graph).cost + 1e-12
        for draw in range(3):
            assert optimal.cost <= random_schedule(graph, cost, rng, max_stage_size=3).check(graph).cost + 1e-12


def test_the_dp_finds_what_greedy_misses():
    """The seed's Fig. 1: a long chain beside three short independent convolutions; greedy launches everything
    ready at once and leaves the chain's tail alone, the optimum pairs the tail with the short ones."""
    graph = OpGraph([Op("a", work=4.0), Op("b", ("a",), work=4.0), Op("c", work=4.0), Op("d", work=4.0)])
    cost = ModelledCost(peak=2.0, lanes=2)
    optimal, greedy = optimal_schedule(graph, cost), greedy_schedule(graph, cost)
    assert optimal.cost < greedy.cost
    assert optimal.cost < sequential_schedule(graph, cost).cost
    assert [len(stage.ops) for stage in optimal.stages] == [2, 2]


def test_merging_is_chosen_when_cheaper_and_only_within_a_group():
    ops = [Op("x"), *(Op(f"c{i}", ("x",), kind="conv", merge_group="conv@x", work=1.0) for i in range(3)),
           Op("p", ("x",), kind="pool", work=1.0)]
    graph = OpGraph(ops)
    schedule = optimal_schedule(graph, ModelledCost(peak=4.0, lanes=4, launch=1.0)).check(graph)
    merged = [stage for stage in schedule.stages if stage.strategy == MERGED]
    assert merged and set(merged[0].ops) == {"c0", "c1", "c2"}
    with pytest.raises(ScheduleError, match="merge group"):
        Schedule((Stage(("x",)), Stage(("c0", "p"), MERGED), Stage(("c1", "c2")))).check(graph)


def test_limits_keep_schedules_valid_and_never_beat_the_optimum():
    rng = np.random.default_rng(7)
    graph = random_dag(rng, 16, density=0.15)
    cost = RandomCost(3)
    exact, pruned = SearchStats(), SearchStats()
    optimal = optimal_schedule(graph, cost, stats=exact)
    limited = optimal_schedule(graph, cost, max_stage_size=2, block_size=6, stats=pruned).check(graph)
    assert all(len(stage.ops) <= 2 for stage in limited.stages)
    assert limited.cost >= optimal.cost - 1e-12
    assert pruned.states < exact.states and pruned.largest_block <= 6


def test_chokepoints_split_a_graph_without_loss():
    """A chain of multi-branch blocks: every joining operator is a block of its own, and the DP over the blocks
    equals the DP over the whole graph (brute force agrees)."""
    ops = [Op("in")]
    for b in range(2):
        head = ops[-1].name
        ops += [Op(f"b{b}x", (head,)), Op(f"b{b}y", (head,)), Op(f"b{b}z", (f"b{b}x",))]
        ops.append(Op(f"join{b}", (f"b{b}y", f"b{b}z")))
    graph = OpGraph(ops)
    parts = [graph.names(mask) for mask in blocks(graph)]
    assert parts == [("in",), ("b0x", "b0y", "b0z"), ("join0",), ("b1x", "b1y", "b1z"), ("join1",)]
    cost = RandomCost(5)
    assert optimal_schedule(graph, cost).cost == pytest.approx(brute_force_schedule(graph, cost).cost)


def test_bad_graphs_are_refused_with_the_field_named():
    with pytest.raises(GraphError, match="cycle through a, b"):
        OpGraph([Op("a", ("b",)), Op("b", ("a",)), Op("c")])
    with pytest.raises(GraphError, match=r"a\.inputs: 'zz' is not an operator"):
        OpGraph([Op("a", ("zz",))])
    with pytest.raises(GraphError, match="used twice"):
        OpGraph([Op("a"), Op("a")])
    with pytest.raises(GraphError, match="ops"):
        OpGraph.from_dict({"ops": "no"})
    with pytest.raises(ValueError, match="max_stage_size"):
        optimal_schedule(OpGraph([Op("a")]), RandomCost(), max_stage_size=0)


def test_schedules_that_break_a_dependency_are_refused():
    graph = OpGraph([Op("a"), Op("b", ("a",))])
    with pytest.raises(ScheduleError, match="'b' runs before its input 'a'"):
        Schedule((Stage(("a", "b")),)).check(graph)
    with pytest.raises(ScheduleError, match="never run"):
        Schedule((Stage(("a",)),)).check(graph)


def test_graphs_and_schedules_round_trip_through_json():
    graph = random_dag(np.random.default_rng(1), 6, 0.4)
    again = OpGraph.from_dict(graph.to_dict())
    assert again.to_dict() == graph.to_dict()
    schedule = optimal_schedule(graph, RandomCost(1))
    assert Schedule.from_dict(schedule.to_dict()).check(again) == schedule


def test_a_block_too_large_is_cut_level_by_level_keeping_branches_side_by_side():
    ops = [Op(f"c{c}.{s}", (f"c{c}.{s - 1}",) if s else ()) for c in range(3) for s in range(3)]
    graph = OpGraph(ops)
    parts = [set(graph.names(mask)) for mask in blocks(graph, block_size=3)]
    assert parts == [{f"c{c}.{s}" for c in range(3)} for s in range(3)]
    cost = ModelledCost(peak=3.0, lanes=3)
    limited = optimal_schedule(graph, cost, block_size=3).check(graph)
    assert limited.cost == pytest.approx(optimal_schedule(graph, cost).cost)
