"""timm-style: build many sampled genomes of every space for every dataset shape, run them, and check the
output, its finiteness, and that the hand-computed description (parameters, MACs) matches the module."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from evaluators.builders import architecture, describe
from evaluators.networks import build_model
from evaluators.catalog import DATASETS
from nas.spaces import GenomeError, space_from_config
from nas.spaces.pelee import PELEENET

SPACES = [{"name": "pelee"}, {"name": "chain"}, {"name": "chain", "max_layers": 3, "modules": 4},
          {"name": "cell"}, {"name": "cell", "cells_per_stage": 1, "stages": 4, "channels": 8}]
SAMPLES = 2


def _genomes(config: dict) -> list:
    space = space_from_config(config)
    rng = np.random.default_rng(len(str(config)))
    return [space.sample(rng) for _ in range(SAMPLES)]


@pytest.mark.parametrize("dataset", sorted(DATASETS))
@pytest.mark.parametrize("config", SPACES, ids=lambda c: "-".join(map(str, c.values())))
def test_sampled_genomes_build_run_and_match_their_description(config, dataset):
    shape, classes = DATASETS[dataset]
    for genome in _genomes(config):
        torch.manual_seed(0)
        model = build_model(genome, config, dataset).eval()
        summary = describe(genome, config, dataset)
        x = torch.randn(2, *shape)
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            out = model(x)
        assert out.shape == (2, classes)
        assert torch.isfinite(out).all()
        assert sum(p.numel() for p in model.parameters()) == summary["params"]
        assert sum(row["params"] for row in summary["layers"]) == summary["params"]
        # torch counts 2 FLOPs per multiply-accumulate of convs and linear layers, per image.
        assert counter.get_total_flops() == 2 * 2 * summary["macs"]
        assert summary["output"] == [classes] and summary["input"] == list(shape)
        assert min(summary["layers"][-2]["output"][1:]) >= 1


def test_training_mode_backward_works_for_every_space():
    for config in SPACES[::2]:
        for genome in _genomes(config)[:1]:
            model = build_model(genome, config, "digits").train()
            loss = model(torch.randn(4, 1, 8, 8)).logsumexp(1).mean()
            loss.backward()
            assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


def test_peleenet_has_the_measured_size_on_cifar10():
    """The H100 measurements of the README used this network: 2.1 M parameters on CIFAR-shaped data."""
    summary = describe(PELEENET, {"name": "pelee"}, "cifar10")
    assert 2.0e6 < summary["params"] < 2.2e6
    channels = [row["output"][0] for row in summary["layers"] if row["block"] == "transition"]
    assert channels == [128, 256, 512, 704]  # PeleeNet's stage widths: transitions without compression
    sizes = [row["output"][1] for row in summary["layers"] if row["block"] == "transition"]
    assert sizes == [8, 4, 2, 2]  # 32 -> stem 16 -> three pooled transitions, the last stage unpooled


def test_small_images_drop_the_earliest_reductions():
    digits = describe(PELEENET, {"name": "pelee"}, "digits")
    stem = digits["layers"][0]
    assert stem["output"][1:] == [8, 8]
    assert [row["output"][1] for row in digits["layers"] if row["block"] == "transition"] == [8, 4, 2, 2]
    chain = describe({"layers": [{"kernel": 5, "filters": 16}]}, {"name": "chain", "modules": 5}, "digits")
    assert chain["layers"][-2]["output"][1:] == [1, 1]  # 8 -> 4 -> 2 -> 1, then no more pooling


def test_invalid_genome_raises_the_validators_error():
    with pytest.raises(GenomeError, match=r"stages\[0\]\[1\]"):
        architecture({"stages": [[2, 0, 32]] * 4}, {"name": "pelee"}, "digits")
    with pytest.raises(ValueError, match="Unknown dataset"):
        architecture(PELEENET, {"name": "pelee"}, "imagenet")
