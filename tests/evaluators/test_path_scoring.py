"""Path scoring with a supernet's weights: BN statistics recomputed per path, weights held once per digest,
and the ranking check built on it."""
from __future__ import annotations

import math

import pytest
import torch

from evaluators import path_scoring
from evaluators.datasets import load_dataset
from evaluators.path_scoring import calibration_batches, load_supernet, save_supernet, score_on_supernet, score_paths
from evaluators.ranking_check import check_ranking
from evaluators.supernet import SuperNet, batch_norms
from nas.oneshot import random_paths
from nas.spaces import space_from_config

CONFIG = {"name": "cell", "cells_per_stage": 1, "stages": 2, "channels": 8}
SPACE = space_from_config(CONFIG)


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    torch.manual_seed(0)
    supernet = SuperNet(CONFIG, "digits")
    file = tmp_path_factory.mktemp("supernet") / "supernet.pt"
    return file, save_supernet(supernet, file)


def test_scores_are_finite_accuracies_after_recalibration_and_leave_the_supernet_as_it_was(weights):
    file, digest = weights
    supernet, found = load_supernet(CONFIG, "digits", file, digest)
    assert found == digest
    before = {name: value.clone() for name, value in supernet.state_dict().items()}
    data = load_dataset("digits", "cpu", 0)
    paths = random_paths(SPACE, 1, 3)
    results = score_on_supernet(supernet, paths, data, calibration_batches(data, 256))
    assert [r["status"] for r in results] == ["ok"] * 3
    assert all(0 <= r["accuracy"] <= 1 and math.isfinite(r["val_loss"]) for r in results)
    assert all(r["timings"]["calibrate"] > 0 and r["timings"]["overhead"] >= 0 for r in results)
    assert all(torch.equal(before[name], value) for name, value in supernet.state_dict().items())


def test_recalibration_gives_each_path_the_statistics_of_its_own_activations():
    torch.manual_seed(0)
    supernet = SuperNet(CONFIG, "digits")
    data = load_dataset("digits", "cpu", 0)
    batches = calibration_batches(data, 256)
    path = random_paths(SPACE, 2, 1)[0]
    path_scoring.recalibrate(supernet, path, batches)
    stem = batch_norms(supernet)[0]  # the stem's BN sees every image: its mean is the batches' mean activation
    with torch.no_grad():
        activations = torch.cat([supernet.layers[0][0](b) for b in batches])
    assert torch.allclose(stem.running_mean, activations.mean((0, 2, 3)), atol=1e-5)
    assert not supernet.training


def test_a_known_digest_needs_no_weights_and_a_wrong_one_is_refused(weights):
    file, digest = weights
    paths = random_paths(SPACE, 3, 2) + [{"edges": {"1<-0": "none"}}]
    scored = score_paths(paths, CONFIG, "digits", weights=file, digest=digest)
    again = score_paths(paths, CONFIG, "digits", digest=digest)  # held by this process: not read again
    assert [r["accuracy"] for r in again["results"]] == [r["accuracy"] for r in scored["results"]]
    assert scored["results"][-1]["status"] == "invalid" and "edges" in scored["results"][-1]["reason"]
    with pytest.raises(ValueError, match="not the expected"):
        score_paths(paths, CONFIG, "digits", weights=file, digest="0" * 16)
    path_scoring._cache.clear()
    with pytest.raises(ValueError, match="not loaded in this process"):
        score_paths(paths, CONFIG, "digits", digest=digest)


def test_the_ranking_check_reports_tau_with_its_interval(weights):
    file, digest = weights
    seen = []
    check = check_ranking(CONFIG, "digits", {"epochs": 1, "batch_size": 128}, weights=file, digest=digest, count=5,
                          seed=4, on_path=seen.append)
    assert len(check["paths"]) == len(seen) == 5 and all(r["status"] == "ok" for r in check["paths"])
    summary = check["summary"]
    assert summary["n"] == 5 and -1 <= summary["tau"] <= 1 and summary["low"] <= summary["tau"] <= summary["high"]


def test_a_ranking_check_with_repeats_ranks_by_loss_against_the_mean_of_its_trainings(weights):
    file, digest = weights
    training = {"epochs": 1, "batch_size": 128, "seed": 7}
    check = check_ranking(CONFIG, "digits", training, weights=file, digest=digest, count=5, seed=4, repeats=2,
                          score="loss", reference="loss")
    once = check_ranking(CONFIG, "digits", training, weights=file, digest=digest, count=5, seed=4)
    for row, single in zip(check["paths"], once["paths"]):
        assert [t["seed"] for t in row["trainings"]] == [7, 507] and row["status"] == "ok"
        assert row["trainings"][0]["accuracy"] == single["standalone"]  # the first training is the check's own
        assert row["supernet"] == row["supernet_loss"] == single["supernet_loss"]  # shown as measured: a loss
        assert row["standalone"] == pytest.approx(sum(t["loss"] for t in row["trainings"]) / 2)
    summary = check["summary"]
    assert summary["n"] == 5 and summary["repeats"] == 2 and summary["score"] == summary["reference"] == "loss"
    assert summary["against"] == "supernet validation loss vs validation loss of the mean of 2 stand-alone trainings"
    with pytest.raises(ValueError, match="repeats"):
        check_ranking(CONFIG, "digits", training, weights=file, digest=digest, count=5, repeats=0)
