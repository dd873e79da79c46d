"""Inference schedules of built networks: the executor equals the network, profiles are shared, bad input."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from evaluators.networks import build_model
from evaluators.inference.executor import ScheduledNet
from evaluators.inference.network import schedule_network
from evaluators.inference.profile import ProfileCache
from evaluators.inference.program import network_program, operator_graph, trace
from nas.schedule import MERGED, RandomCost, greedy_schedule, optimal_schedule, sequential_schedule
from nas.spaces.cell import CellSpace

from tests.evaluators.conftest import TINY

CELL_SPACE = {"name": "cell", "cells_per_stage": 2, "stages": 2, "channels": 8}


def _randomize_norms(model: torch.nn.Module, seed: int) -> None:
    """Batch norms with statistics and affine weights far from their initial values, so a merged stage
    that mixed up channels would show."""
    generator = torch.Generator().manual_seed(seed)
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            n = module.num_features
            module.running_mean.copy_(torch.randn(n, generator=generator))
            module.running_var.copy_(torch.rand(n, generator=generator) + 0.5)
            module.weight.data.copy_(torch.randn(n, generator=generator))
            module.bias.data.copy_(torch.randn(n, generator=generator))


@pytest.mark.parametrize("seed", range(6))
def test_the_executor_gives_the_networks_outputs_on_random_cells(seed):
    genome = CellSpace().sample(np.random.default_rng(seed))
    torch.manual_seed(seed)
    model = build_model(genome, CELL_SPACE, "digits").eval()
    _randomize_norms(model, seed)
    x = torch.randn(3, 1, 8, 8)
    expected = model(x)
    program = network_program(model)
    graph = operator_graph(program, trace(program, x))
    schedules = [sequential_schedule(graph, RandomCost(seed)), greedy_schedule(graph, RandomCost(seed)),
                 optimal_schedule(graph, RandomCost(seed, merge_probability=1.0))]
    for schedule in schedules:
        schedule.check(graph)
        net = ScheduledNet(model, program, schedule)
        try:
            assert torch.allclose(net(x), expected, atol=1e-5, rtol=1e-4)
        finally:
            net.runner.close()


def test_merged_convolutions_and_pools_equal_the_separate_ones():
    genome = {"edges": {"1<-0": "conv_3x3", "2<-0": "conv_3x3", "2<-1": "avg_pool_3x3", "3<-0": "conv_3x3",
                        "3<-1": "avg_pool_3x3", "3<-2": "skip_connect"}}
    torch.manual_seed(0)
    model = build_model(genome, CELL_SPACE, "digits").eval()
    _randomize_norms(model, 1)
    x = torch.randn(2, 1, 8, 8)
    program = network_program(model)
    graph = operator_graph(program, trace(program, x))
    schedule = optimal_schedule(graph, RandomCost(0, merge_probability=1.0)).check(graph)
    merged = [stage for stage in schedule.stages if stage.strategy == MERGED]
    assert {graph.by_name[s.ops[0]].kind for s in merged} == {"conv_3x3", "avg_pool_3x3"}
    net = ScheduledNet(model, program, schedule)
    assert torch.allclose(net(x), model(x), atol=1e-5, rtol=1e-4)
    net.runner.close()


def test_a_cell_is_a_multi_branch_graph_and_a_chain_is_a_chain():
    torch.manual_seed(0)
    genome, space = TINY["cell"]
    cell = network_program(build_model(genome, space, "digits"))
    kinds = [op.kind for op in cell.ops]
    assert kinds.count("conv_3x3") == 2 and "skip_connect" not in kinds and "none" not in kinds
    genome, space = TINY["chain"]
    model = build_model(genome, space, "digits")
    program = network_program(model)
    graph = operator_graph(program, trace(program, torch.zeros(1, 1, 8, 8)))
    assert graph.width() == 1 and len(graph) == len(model.spec["layers"])


def test_schedule_network_reports_and_shares_its_profiles():
    torch.manual_seed(0)
    model = build_model({"edges": {"1<-0": "conv_3x3", "2<-0": "conv_1x1", "2<-1": "avg_pool_3x3",
                                   "3<-0": "conv_3x3", "3<-1": "skip_connect", "3<-2": "conv_1x1"}},
                        CELL_SPACE, "digits")
    cache = ProfileCache()
    first = schedule_network(model, (1, 8, 8), torch.device("cpu"), 2, repeats=3, warmup=1, cache=cache)
    assert first["chosen"] in ("optimal", "sequential")
    assert first["latency_ms"] == min(first["measured_ms"]["optimal"], first["measured_ms"]["sequential"])
    assert first["modelled_ms"]["optimal"] <= first["modelled_ms"]["greedy"] + 1e-9
    assert first["modelled_ms"]["optimal"] <= first["modelled_ms"]["sequential"] + 1e-9
    assert first["search"]["profiled"] == first["search"]["cache_misses"] > 0
    # the same network again (or any network made of the same operators): look-ups only
    second = schedule_network(model, (1, 8, 8), torch.device("cpu"), 2, repeats=3, warmup=1, cache=cache)
    assert second["search"]["profiled"] == 0 and second["search"]["cache_misses"] == 0
    assert second["optimal"]["stages"] == first["optimal"]["stages"]
    assert all(key.startswith("cpu|b2|") for key in cache.entries)


def test_a_batch_of_zero_is_refused():
    model = build_model(*TINY["cell"], "digits")
    with pytest.raises(ValueError, match=r"batch: must be an integer in \[1, 4096\] \(got 0\)"):
        schedule_network(model, (1, 8, 8), torch.device("cpu"), 0)


def test_evaluate_measures_the_latency_objective_when_asked():
    import json

    from evaluators.evaluate import evaluate
    from evaluators.result import EvaluationResult

    genome, space = TINY["cell"]
    training = {"epochs": 1, "batch_size": 64, "seed": 1}
    plain = evaluate(genome, space, training, "digits", "cpu")
    assert "latency" not in plain.metrics and "schedule" not in plain.metrics
    result = evaluate(genome, space, training, "digits", "cpu", latency={"batch": 2, "repeats": 3})
    assert result.status == "ok", result.message
    assert result.objectives()["latency"] == result.metrics["schedule"]["latency_ms"] > 0
    assert result.metrics["schedule"]["batch"] == 2 and "schedule" not in result.objectives()
    assert result.fitness == plain.fitness  # measuring after training changes nothing of the training
    assert EvaluationResult.from_dict(json.loads(json.dumps(result.to_dict(), allow_nan=False))) == result


def test_the_exported_model_py_runs_its_schedule_json_with_the_same_outputs():
    import ast

    from evaluators.model_source import standalone_source

    genome = {"edges": {"1<-0": "conv_3x3", "2<-0": "conv_3x3", "2<-1": "avg_pool_3x3", "3<-0": "none",
                        "3<-1": "skip_connect", "3<-2": "conv_1x1"}}
    torch.manual_seed(0)
    model = build_model(genome, CELL_SPACE, "digits").eval()
    _randomize_norms(model, 2)
    report = schedule_network(model, (1, 8, 8), torch.device("cpu"), 1, repeats=3, warmup=1, cache=ProfileCache())
    source = standalone_source(genome, CELL_SPACE, "digits")
    imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Import)
                for alias in node.names}
    assert imported <= {"torch"}
    namespace: dict = {"__name__": "exported_model"}
    exec(compile(source, "model.py", "exec"), namespace)
    net = namespace["build"]()
    net.load_state_dict(model.state_dict())
    x = torch.randn(4, 1, 8, 8)
    for schedule in (report["schedule"], report.get("optimal", report["schedule"])):
        assert torch.allclose(namespace["run_schedule"](net, schedule, x), model(x), atol=1e-5, rtol=1e-4)
    with pytest.raises(ValueError, match="another architecture"):
        namespace["run_schedule"](net, {"stages": [{"ops": ["L0.conv_bn"]}]}, x)


@pytest.mark.parametrize("name", ["pelee", "chain"])
def test_the_other_spaces_branches_are_operators_and_the_executor_equals_them(name):
    from evaluators.model_source import standalone_source

    genome, space = TINY[name]
    torch.manual_seed(0)
    model = build_model(genome, space, "digits").eval()
    _randomize_norms(model, 3)
    x = torch.randn(2, 1, 8, 8)
    program = network_program(model)
    graph = operator_graph(program, trace(program, x))
    if name == "pelee":  # the stem's branch beside its pool; a 2-way dense layer's two branches
        assert graph.width() >= 2 and {"stem.branch", "stem.pool", "dense.branch2", "concat"} <= {
            op.kind for op in graph.ops}
    greedy = greedy_schedule(graph, RandomCost(1)).check(graph)
    net = ScheduledNet(model, program, greedy)
    try:
        assert torch.allclose(net(x), model(x), atol=1e-5, rtol=1e-4)
    finally:
        net.runner.close()
    namespace: dict = {"__name__": "exported_model"}
    exec(compile(standalone_source(genome, space, "digits"), "model.py", "exec"), namespace)
    exported = namespace["build"]()
    exported.load_state_dict(model.state_dict())
    assert torch.allclose(namespace["run_schedule"](exported, greedy.to_dict(), x), model(x), atol=1e-5, rtol=1e-4)
