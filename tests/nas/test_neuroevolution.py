"""Neuroevolution core (seed 001): counter-based noise, ES estimates, and the CU / SU / scalars decompositions."""
from __future__ import annotations

import numpy as np
import pytest

from nas.neuroevolution import ESConfig, base_noise, centred_ranks, distributed_gradient, share, traffic
from nas.neuroevolution.es import gradient_slice, reference_gradient
from nas.neuroevolution.noise import offspring_noise, row_key

M = 257  # not a multiple of 2 or 3, so the slices are uneven


def fitness_for(config: ESConfig) -> np.ndarray:
    rng = np.random.default_rng(7)
    return rng.normal(size=config.population)


def assert_rel_close(got: np.ndarray, want: np.ndarray, rel: float = 1e-6) -> None:
    assert got.shape == want.shape
    error = np.max(np.abs(got - want)) / np.max(np.abs(want))
    assert error <= rel, error


# --- noise ----------------------------------------------------------------------------------------------------
def test_noise_is_a_pure_function_of_seed_generation_and_index():
    a = base_noise(5, 2, 9, 0, 100)
    assert np.array_equal(a, base_noise(5, 2, 9, 0, 100))
    for other in (base_noise(6, 2, 9, 0, 100), base_noise(5, 3, 9, 0, 100), base_noise(5, 2, 10, 0, 100)):
        assert not np.allclose(a, other)
    assert len({row_key(0, g, i) for g in range(20) for i in range(20)}) == 400


def test_noise_is_standard_normal():
    values = base_noise(1, 0, 0, 0, 200_000)
    assert abs(values.mean()) < 0.01 and abs(values.std() - 1.0) < 0.01
    assert abs(np.mean(values ** 4) - 3.0) < 0.06  # Gaussian kurtosis, not uniform's 1.8


@pytest.mark.parametrize("start,stop", [(0, 1000), (13, 14), (100, 731), (999, 1000), (500, 500)])
def test_a_regenerated_slice_equals_the_same_slice_of_the_whole_row(start, stop):
    whole = base_noise(3, 4, 5, 0, 1000)
    assert np.array_equal(base_noise(3, 4, 5, start, stop), whole[start:stop])
    assert np.array_equal(base_noise(3, 4, 5, start, stop, block=7), whole[start:stop])


def test_noise_written_into_a_strided_view_equals_the_contiguous_noise():
    """DarwiNN's CU bug: ``torch.randn(out=strided_view)`` fills a view with another stream than a contiguous
    buffer gets. Here the values depend on the element's index only, whatever the destination's layout."""
    whole = base_noise(3, 4, 5, 0, 600)
    matrix = np.zeros((600, 3))
    column = matrix[:, 1]  # a strided view
    assert not column.flags["C_CONTIGUOUS"]
    base_noise(3, 4, 5, 0, 600, block=64, out=column)
    assert np.array_equal(matrix[:, 1], whole)
    slices = np.zeros((2, 600))[:, ::2]  # the columns [0, 300) and [300, 600) of a row, each through a view
    base_noise(3, 4, 5, 0, 300, out=slices[0])
    base_noise(3, 4, 5, 300, 600, out=slices[1])
    assert np.array_equal(slices.reshape(-1), whole)


def test_mirrored_offspring_share_a_row_with_opposite_signs():
    plus, minus = offspring_noise(1, 1, 6, 0, 50), offspring_noise(1, 1, 7, 0, 50)
    assert np.array_equal(plus, -minus)
    assert not np.allclose(offspring_noise(1, 1, 8, 0, 50), plus)
    assert np.array_equal(offspring_noise(1, 1, 6, 0, 50, mirrored=False), base_noise(1, 1, 6, 0, 50))


# --- shaping and configuration --------------------------------------------------------------------------------
def test_centred_ranks():
    shaped = centred_ranks([3.0, -1.0, 10.0, float("nan"), 0.5])
    assert np.allclose(shaped, [0.25, -0.25, 0.5, -0.5, 0.0])
    assert shaped.sum() == pytest.approx(0.0)


@pytest.mark.parametrize("kwargs,field", [
    ({"population": 7}, "population"), ({"sigma": 0.0}, "sigma"), ({"sigma": -1.0}, "sigma"),
    ({"algorithm": "cma"}, "algorithm"), ({"population": 1, "mirrored": False}, "population"),
    ({"seed": -1}, "seed"),
])
def test_bad_configs_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=f"`{field}`"):
        ESConfig(**kwargs)


def test_odd_population_is_fine_without_mirroring():
    assert ESConfig(population=7, mirrored=False).population == 7


# --- exactness of the decompositions --------------------------------------------------------------------------
CONFIGS = [ESConfig("openai_es", 12, 0.1, True, 11), ESConfig("openai_es", 9, 0.3, False, 2),
           ESConfig("snes", 10, 0.2, True, 4)]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.algorithm}-P{c.population}-m{int(c.mirrored)}")
@pytest.mark.parametrize("method", ["cu", "su", "scalars"])
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_distributed_estimate_equals_the_single_process_one(config, method, workers):
    fitness = fitness_for(config)
    sigma = np.linspace(0.05, 0.3, M) if config.algorithm == "snes" else None
    want = reference_gradient(config, 3, fitness, M, sigma)
    got = distributed_gradient(method, config, 3, fitness, M, workers, sigma)
    assert set(got) == set(want)
    for name in want:
        assert_rel_close(got[name], want[name])


def test_openai_es_estimate_points_uphill_on_a_quadratic():
    config = ESConfig("openai_es", 200, 0.05, True, 0)
    theta = np.linspace(-1, 1, 20)
    fitness = np.array([-np.sum((theta + config.sigma * offspring_noise(0, 0, i, 0, 20)) ** 2)
                        for i in range(config.population)])
    gradient = gradient_slice(config, 0, centred_ranks(fitness), 0, 20)["theta"]
    true_ascent = -2 * theta
    cosine = gradient @ true_ascent / np.linalg.norm(gradient) / np.linalg.norm(true_ascent)
    assert cosine > 0.8, cosine


def test_share_covers_the_range_once():
    for total, workers in [(10, 3), (2, 4), (257, 2)]:
        spans = [share(total, workers, j) for j in range(workers)]
        assert [i for span in spans for i in span] == list(range(total))
    with pytest.raises(ValueError):
        share(10, 2, 2)


# --- traffic --------------------------------------------------------------------------------------------------
def test_cu_moves_about_half_of_su_when_m_is_much_larger_than_p():
    for workers in (2, 4, 8):
        cu = traffic("cu", 1_000_000, 64, workers)
        su = traffic("su", 1_000_000, 64, workers)
        assert cu["bytes"] <= 0.55 * su["bytes"], (workers, cu["bytes"], su["bytes"])
    scalars = traffic("scalars", 1_000_000, 64, 4)
    assert scalars["bytes"] == (64 + 3 * 64) * 4  # each uploads 16 and downloads the other 48
    assert traffic("cu", 1000, 64, 1)["bytes"] == (64 + 1000) * 4
    assert cu["weights_bytes"] == 64 * 1_000_000 * 4
