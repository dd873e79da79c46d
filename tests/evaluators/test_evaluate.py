"""``evaluate`` end to end on the CPU: real accuracy, JSON results, determinism, and every failure as a result
after which the same process evaluates normally."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evaluators.evaluate import evaluate
from evaluators.result import EvaluationResult

from .conftest import TINY

ROOT = Path(__file__).resolve().parents[2]
GENOME, SPACE = TINY["chain"]
TRAINING = {"epochs": 3, "batch_size": 64, "learning_rate": 0.003, "seed": 1}
KEYS = {"status", "fitness", "failure", "message", "metrics", "curve", "timings", "device", "peak_memory_bytes",
        "normalization", "artifacts", "version"}


def _check_shape(result: EvaluationResult) -> None:
    assert set(result.to_dict()) == KEYS
    json.dumps(result.to_dict(), allow_nan=False)  # plain JSON: no NaN, no tensors
    assert EvaluationResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result
    assert {"build", "train", "validate", "total"} <= set(result.timings)


def _assert_recovers() -> None:
    """A normal evaluation right after a failure, in the same process, succeeds."""
    result = evaluate(GENOME, SPACE, {**TRAINING, "epochs": 1}, "digits", "cpu")
    assert result.status == "ok", result.message
    assert result.fitness > 0.2


def test_digits_reaches_real_accuracy_and_is_json():
    result = evaluate(GENOME, SPACE, TRAINING, "digits", "cpu")
    _check_shape(result)
    assert result.status == "ok" and result.failure is None
    assert result.fitness == result.metrics["accuracy"] > 0.8  # chance is 0.1
    assert [point["epoch"] for point in result.curve] == [1, 2, 3]
    assert result.curve[-1]["train_loss"] < result.curve[0]["train_loss"]
    metrics = result.metrics
    assert metrics["params"] == 21274 and metrics["flops"] > 0 and metrics["latency_ms"] > 0
    assert result.device == "cpu" and result.peak_memory_bytes is None


def test_same_seed_same_accuracy_on_cpu():
    first, second = (evaluate(GENOME, SPACE, TRAINING, "digits", "cpu") for _ in range(2))
    assert first.fitness == second.fitness
    assert first.curve == second.curve
    other = evaluate(GENOME, SPACE, {**TRAINING, "seed": 2}, "digits", "cpu")
    assert other.curve != first.curve


@pytest.mark.parametrize("name", ["cell", "pelee"])
def test_every_space_trains_in_both_precisions(name):
    genome, space = TINY[name]
    for precision in ("fp32", "bf16"):
        result = evaluate(genome, space, {**TRAINING, "epochs": 2, "precision": precision}, "digits", "cpu")
        _check_shape(result)
        assert result.status == "ok", result.message
        assert result.fitness > 0.3, (precision, result.curve)
        assert result.metrics["precision"] == precision


def test_oom_in_the_training_step_is_a_result():
    result = evaluate(GENOME, SPACE, TRAINING, "digits", "cpu", fault="oom")
    _check_shape(result)
    assert (result.status, result.failure) == ("failed", "oom")
    assert "OutOfMemoryError" in result.message and result.fitness is None
    _assert_recovers()


def test_nan_loss_stops_early_as_diverged():
    result = evaluate(GENOME, SPACE, {**TRAINING, "epochs": 50}, "digits", "cpu", fault="nan")
    _check_shape(result)
    assert (result.status, result.failure) == ("failed", "diverged")
    assert "non-finite" in result.message and result.curve == []  # stopped in the first epoch
    _assert_recovers()


def test_exploding_learning_rate_really_diverges():
    result = evaluate(GENOME, SPACE, {**TRAINING, "optimizer": "sgd", "learning_rate": 1e4}, "digits", "cpu")
    assert (result.status, result.failure) == ("failed", "diverged"), result
    _assert_recovers()


def test_wall_time_cap_is_a_timeout():
    result = evaluate(GENOME, SPACE, {**TRAINING, "epochs": 200, "max_seconds": 0.3}, "digits", "cpu")
    _check_shape(result)
    assert (result.status, result.failure) == ("failed", "timeout")
    assert result.timings["total"] < 10 and len(result.curve) < 200
    _assert_recovers()


@pytest.mark.parametrize("genome, space, training, dataset, device, match", [
    ({"layers": []}, SPACE, TRAINING, "digits", "cpu", "`layers` = \\[\\] is not allowed"),
    ({"stages": [[3, 1, 8]] * 4}, {"name": "pelee"}, TRAINING, "digits", "cpu", "stages\\[0\\]\\[0\\]"),
    (GENOME, {"name": "tree"}, TRAINING, "digits", "cpu", "Unknown search space 'tree'"),
    (GENOME, SPACE, {"epochs": -1}, "digits", "cpu", "`epochs`"),
    (GENOME, SPACE, TRAINING, "imagenet", "cpu", "Unknown dataset 'imagenet'"),
    (GENOME, SPACE, TRAINING, "digits", "tpu:0", "tpu"),
])
def test_invalid_inputs_are_invalid_results(genome, space, training, dataset, device, match):
    result = evaluate(genome, space, training, dataset, device)
    _check_shape(result)
    assert (result.status, result.failure) == ("failed", "invalid")
    assert result.message
    import re

    assert re.search(match, result.message), result.message


def test_missing_dataset_is_an_error_naming_the_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("NAS_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("NAS_DATA_DOWNLOAD", raising=False)
    result = evaluate(GENOME, SPACE, TRAINING, "cifar10", "cpu")
    assert (result.status, result.failure) == ("failed", "error")
    assert str(tmp_path) in result.message
    _assert_recovers()


REAL_OOM = """
import json, resource, torch
torch.set_num_threads(1)
from evaluators.evaluate import evaluate
from evaluators.result import EvaluationResult
from nas.spaces.pelee import PELEENET
small = ({"layers": [{"kernel": 3, "filters": 16}]}, {"name": "chain", "modules": 1}, {"epochs": 1}, "synthetic", "cpu")
evaluate(*small)  # loads the data and the code before the cap
size = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize"))
resource.setrlimit(resource.RLIMIT_AS, (size + 10**9, size + 10**9))  # 1 GB more address space, no more
big = evaluate(PELEENET, {"name": "pelee"}, {"epochs": 1, "batch_size": 1600}, "synthetic", "cpu")
after = evaluate(*small)
print(json.dumps({"big": [big.status, big.failure, big.message], "after": [after.status, after.fitness]}))
"""


def test_real_cpu_out_of_memory_under_a_memory_cap():
    """A PeleeNet with a batch of 1,600 images needs several GB; under a 1 GB cap the allocation really fails,
    and the next evaluation in the same process succeeds."""
    out = subprocess.run([sys.executable, "-c", REAL_OOM], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["big"][:2] == ["failed", "oom"], report
    assert "allocate" in report["big"][2]
    assert report["after"][0] == "ok" and report["after"][1] > 0.15


def test_trained_weights_go_to_weights_to_and_load_into_the_architecture():
    import io

    import torch

    from evaluators.blocks import Net
    from evaluators.builders import architecture, as_space
    from evaluators.model_files import load_weights

    out = io.BytesIO()
    result = evaluate(GENOME, SPACE, {**TRAINING, "epochs": 1}, "digits", "cpu", weights_to=out)
    assert result.status == "ok" and "weights" in result.timings and out.tell() > 0
    state = load_weights(io.BytesIO(out.getvalue()))
    model = Net(architecture(GENOME, as_space(SPACE), "digits"))
    model.load_state_dict(state)  # strict: every key and shape matches
    assert all(isinstance(value, torch.Tensor) and value.device.type == "cpu" for value in state.values())
    failed = io.BytesIO()
    assert evaluate(GENOME, SPACE, TRAINING, "nope", "cpu", weights_to=failed).status == "failed"
    assert failed.tell() == 0  # nothing written for a failed evaluation
