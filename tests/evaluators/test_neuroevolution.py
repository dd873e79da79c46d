"""The PyTorch side of weight searches: flat networks, offspring fitness, distributed steps, state, learning."""
from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from evaluators.neuroevolution import WeightEvolution, WeightRun, build_network
from evaluators.weights_network import MAX_PARAMETERS, NetworkError, check_network
from nas.neuroevolution import ESConfig, share
from tests.evaluators.conftest import TINY

MLP = {"kind": "mlp", "layers": [64, 32, 10]}


def make(algorithm: str = "openai_es", population: int = 8, **kwargs) -> WeightEvolution:
    es = ESConfig(algorithm, population, kwargs.pop("sigma", 0.05), True, kwargs.pop("seed", 3))
    return WeightEvolution(WeightRun(kwargs.pop("network", MLP), "digits", es, **kwargs))


def distributed_step(copies: list[WeightEvolution], method: str) -> None:
    """One generation over ``len(copies)`` workers as the engine runs it, by ``method``."""
    workers, first = len(copies), copies[0]
    generation, population, size = first.generation, first.run.es.population, first.size
    fitness: list[float] = []
    for j, copy in enumerate(copies):  # each evaluates its share; the values are allgathered
        fitness += copy.evaluate(generation, share(population, workers, j))
    if method == "cu":
        parts = [copy.gradient_slice(generation, fitness, share(size, workers, j).start,
                                     share(size, workers, j).stop) for j, copy in enumerate(copies)]
        gradient = {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}
    elif method == "su":
        parts = [copy.gradient_slice(generation, fitness, 0, size, share(population, workers, j))
                 for j, copy in enumerate(copies)]
        gradient = {name: sum(part[name] for part in parts[1:]) + parts[0][name] for name in parts[0]}
    else:
        gradient = first.gradient_slice(generation, fitness, 0, size)
    for copy in copies:
        copy.apply(gradient)


def test_network_checks_name_the_part():
    assert check_network(MLP, "digits") == (MLP, 64 * 32 + 32 + 32 * 10 + 10)
    with pytest.raises(NetworkError, match="input size 64") as error:
        check_network({"kind": "mlp", "layers": [10, 10]}, "digits")
    assert error.value.field == "layers"
    with pytest.raises(NetworkError, match="parameters, more than") as error:
        check_network({"kind": "mlp", "layers": [64, 8192, 8192, 10]}, "digits")
    assert error.value.field == "layers" and MAX_PARAMETERS < 8192 * 8192
    with pytest.raises(NetworkError) as error:
        check_network({"kind": "genome", "space": {"name": "chain"}, "genome": {"layers": "x"}}, "digits")
    assert error.value.field == "genome"


def test_flat_vector_matches_the_module():
    evolution = make()
    assert evolution.size == sum(p.numel() for p in build_network(MLP, "digits", 3).parameters())
    x = evolution.data.val_x[:5]
    assert torch.equal(evolution.module(x), torch.func.functional_call(
        evolution.module, evolution._params(evolution.theta.detach()), (x,)))
    assert evolution.digest() == make().digest()  # the same seed gives the same initial weights anywhere


def test_a_genome_network_evolves():
    genome, space = TINY["chain"]
    evolution = make(network={"kind": "genome", "space": space, "genome": genome}, population=4, batch_size=32)
    before = evolution.digest()
    stats = evolution.step()
    assert np.isfinite(stats["best"]) and evolution.digest() != before


@pytest.mark.parametrize("algorithm", ["openai_es", "snes"])
@pytest.mark.parametrize("method", ["cu", "su", "scalars"])
@pytest.mark.parametrize("workers", [2, 3])
def test_distributed_generations_match_the_single_process_run(algorithm, method, workers):
    reference = make(algorithm, population=6)
    copies = [make(algorithm, population=6) for _ in range(workers)]
    for _ in range(2):
        reference.step()
        distributed_step(copies, method)
    for copy in copies:
        assert copy.digest() == copies[0].digest()  # every worker applies the same step: identical weights
        got, want = copy.theta.detach(), reference.theta.detach()
        assert torch.allclose(got, want, rtol=1e-6, atol=1e-7)
    if method in ("cu", "scalars"):  # the same per-element arithmetic as the reference: bit for bit
        assert copies[0].digest() == reference.digest()


def test_state_round_trip_resumes_the_run():
    uninterrupted = make(population=6)
    for _ in range(3):
        uninterrupted.step()
    first = make(population=6)
    first.step()
    resumed = make(population=6)
    resumed.load_state(first.state_bytes())
    assert resumed.generation == 1
    resumed.step()
    resumed.step()
    assert resumed.digest() == uninterrupted.digest()


def test_openai_es_learns_digits_with_a_64_32_10_mlp():
    """CI-sized learning run: P=40, sigma 0.05, Adam lr 0.03, batch 256, 120 generations (about 3 s on one
    core here; the benchmark runs a longer one)."""
    evolution = make(population=40, seed=0, learning_rate=0.03)
    started = time.perf_counter()
    for _ in range(120):
        evolution.step()
    accuracy = evolution.validate()
    print(f"validation accuracy {accuracy:.3f} after 120 generations in {time.perf_counter() - started:.1f} s")
    assert accuracy >= 0.90


def test_snes_learns_above_chance():
    evolution = make("snes", population=20, seed=0, learning_rate=0.05)
    for _ in range(40):
        evolution.step()
    assert evolution.validate() > 0.5
    assert not np.allclose(evolution.sigma, 0.05)


def test_state_dict_loads_into_the_network():
    evolution = make()
    evolution.step()
    module = build_network(MLP, "digits", 99)
    module.load_state_dict(evolution.state_dict())
    x = evolution.data.val_x[:4]
    assert torch.allclose(module(x), torch.func.functional_call(
        evolution.module, evolution._params(evolution.theta.detach()), (x,)))


@pytest.mark.parametrize("network", ["mlp", "genome"])
def test_exported_model_py_and_weights_pt_give_the_evolved_network(tmp_path, network):
    from evaluators.neuroevolution import export_files

    if network == "mlp":
        evolution = make()
    else:
        genome, space = TINY["chain"]
        evolution = make(network={"kind": "genome", "space": space, "genome": genome}, population=4, batch_size=16)
    evolution.step()
    files = export_files(evolution, "test export")
    namespace: dict = {}
    exec(compile(files["model.py"].decode(), "model.py", "exec"), namespace)
    model = namespace["build"]()
    (tmp_path / "weights.pt").write_bytes(files["weights.pt"])
    model.load_state_dict(torch.load(tmp_path / "weights.pt", weights_only=True))
    model.eval()
    from sklearn.datasets import load_digits

    raw = torch.tensor(load_digits().images[:8, None], dtype=torch.float32)  # raw pixel values 0..16
    mean = torch.tensor(evolution.data.normalization["mean"]).view(1, -1, 1, 1) / 16.0
    std = torch.tensor(evolution.data.normalization["std"]).view(1, -1, 1, 1) / 16.0
    normalized = (raw / 16.0 - mean) / std
    want = torch.func.functional_call(evolution.module, evolution._params(evolution.theta.detach()), (normalized,))
    assert torch.allclose(model(raw), want, atol=1e-4)
