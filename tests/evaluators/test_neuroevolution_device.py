"""Weight searches on a GPU worker: master weights, sigma and optimizer on the CPU in every copy, a device copy of
the weights refreshed once per generation, and the evaluation's noise generated on the device (``noise="torch"``,
forced on the CPU here; the CUDA tests run where a GPU is)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from evaluators import device_noise
from evaluators import neuroevolution as ne
from evaluators.neuroevolution import WeightEvolution, WeightRun
from nas.neuroevolution import ESConfig

MLP = {"kind": "mlp", "layers": [64, 32, 10]}
CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def make(algorithm: str = "openai_es", population: int = 8, device: str = "cpu", noise: str = "auto",
         **kwargs) -> WeightEvolution:
    es = ESConfig(algorithm, population, 0.05, kwargs.pop("mirrored", True), 3)
    return WeightEvolution(WeightRun(MLP, "digits", es, **kwargs), device, noise)


def test_noise_follows_the_device_and_can_be_forced():
    assert make().noise == "numpy"
    assert make(noise="torch").noise == "torch"
    with pytest.raises(ValueError, match="The `noise` must be one of auto, numpy, torch"):
        make(noise="curand")


@pytest.mark.parametrize("algorithm", ["openai_es", "snes"])
def test_a_generation_with_device_noise_scores_as_with_numpy_noise(algorithm):
    """The torch path's fitness values equal the numpy path's to float tolerance, for a whole generation (SNES
    after a step, so that its per-parameter sigma is no longer uniform: without mirrored sampling, as the ranks of
    a mirrored pair nearly cancel in sigma's estimate on a nearly linear landscape)."""
    mirrored = algorithm == "openai_es"
    host = make(algorithm, population=10, mirrored=mirrored)
    device = make(algorithm, population=10, mirrored=mirrored, noise="torch")
    for evolution in (host, device):
        evolution.step()
    assert device.digest() == host.digest()  # the same ranks, so the same CPU step
    if algorithm == "snes":
        assert np.ptp(device.sigma) > 0 and np.array_equal(device.sigma, host.sigma)
    want = np.array(host.evaluate(1, range(10)))
    got = np.array(device.evaluate(1, range(10)))
    assert np.allclose(got, want, rtol=1e-5, atol=1e-6)
    assert len(set(want.tolist())) == 10  # ten different offspring, not one repeated
    for index in (0, 5):
        assert torch.allclose(device.offspring_weights(1, index), host.offspring_weights(1, index), rtol=0,
                              atol=1e-6)


def test_the_numpy_path_is_the_perturbation_of_nas_bit_for_bit():
    from nas.neuroevolution.es import perturbation

    evolution = make("snes")
    evolution.step()
    for index in (2, 3):
        want = perturbation(evolution.run.es, 1, index, 0, evolution.size, evolution.sigma)
        got = evolution.offspring_weights(1, index)
        assert torch.equal(got, evolution.theta.detach() + torch.from_numpy(want).to(torch.float32))


@pytest.mark.parametrize("noise,generator", [("torch", device_noise), ("numpy", ne)])
@pytest.mark.parametrize("mirrored,indices,rows", [(True, range(8), 4), (True, range(1, 6), 3),
                                                   (False, range(8), 8)])
def test_mirrored_offspring_generate_their_shared_row_once(monkeypatch, noise, generator, mirrored, indices, rows):
    evolution = make(noise=noise, mirrored=mirrored)
    reference = [evolution.offspring_weights(0, i) for i in indices]
    made: list[int] = []
    original = generator.base_noise

    def counted(seed, generation, row, *args, **kwargs):
        made.append(row)
        return original(seed, generation, row, *args, **kwargs)

    monkeypatch.setattr(generator, "base_noise", counted)
    weights = list(evolution._offspring(0, indices))
    assert len(made) == rows and len(set(made)) == rows
    assert all(torch.equal(a, b) for a, b in zip(weights, reference))
    if mirrored:  # the pair's weights are theta +/- the same perturbation
        theta = evolution.theta.detach()
        plus, minus = weights[indices.index(2)], weights[indices.index(3)]
        assert torch.allclose(plus - theta, theta - minus, atol=1e-7)


def test_master_weights_and_optimizer_stay_on_the_cpu_and_the_device_copy_is_refreshed_per_generation():
    evolution = make(noise="torch", optimizer="adam")
    first = evolution.device_weights()
    evolution.evaluate(0, range(4))
    assert evolution.device_weights() is first  # one copy for all the generation's offspring
    evolution.step()
    assert evolution.theta.device.type == "cpu"
    assert all(value.device.type == "cpu" for state in evolution.optimizer.state.values()
               for value in state.values() if isinstance(value, torch.Tensor))
    refreshed = evolution.device_weights()
    assert refreshed is not first and torch.equal(refreshed[0].cpu(), evolution.theta.detach())


def test_copies_with_either_noise_apply_the_same_estimate_bit_for_bit():
    """A mixed pool: whoever scored the offspring, every copy applies the same gathered estimate on the CPU and
    so holds the same weights (the loop's digest matches every slot's)."""
    host, device = make("snes", population=6), make("snes", population=6, noise="torch")
    for generation in range(3):
        fitness = device.evaluate(generation, range(3)) + host.evaluate(generation, range(3, 6))
        gradient = host.gradient_slice(generation, fitness, 0, host.size)
        host.apply(gradient)
        device.apply(gradient)
        assert device.digest() == host.digest()
        assert np.array_equal(device.sigma, host.sigma)


def test_a_loaded_state_replaces_the_device_copy():
    source = make(noise="torch")
    for _ in range(2):
        source.step()
    target = make(noise="torch")
    before = target.validate()
    target.load_state(source.state_bytes())
    assert target.digest() == source.digest() and target.generation == 2
    assert torch.equal(target.device_weights()[0].cpu(), source.theta.detach())
    assert target.validate() == source.validate() and target.validate() != before
    target.step()
    source.step()
    assert target.digest() == source.digest()


@CUDA
def test_a_cuda_copy_holds_the_cpu_copys_weights_bit_for_bit():
    """The point of master weights on the CPU: a GPU slot's update is the loop's CPU update, so its digest
    matches every generation (no re-fetch of the whole state)."""
    cpu, cuda = make("snes", population=8), make("snes", population=8, device="cuda")
    assert cuda.noise == "torch" and cuda.theta.device.type == "cpu"
    for generation in range(3):
        fitness = cpu.evaluate(generation, range(8))
        assert np.allclose(cuda.evaluate(generation, range(8)), fitness, rtol=1e-4, atol=1e-5)
        gradient = cpu.gradient_slice(generation, fitness, 0, cpu.size)
        cpu.apply(gradient)
        cuda.apply(gradient)
        assert cuda.digest() == cpu.digest()
    assert cuda.device_weights()[0].device.type == "cuda"


@CUDA
def test_a_cuda_state_loads_on_the_cpu():
    cuda = make(device="cuda")
    cuda.step()
    cpu = make()
    cpu.load_state(cuda.state_bytes())
    assert cpu.digest() == cuda.digest()
    cpu.step()
    cuda.step()
    assert cpu.digest() == cuda.digest()
