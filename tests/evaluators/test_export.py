"""Exports: the standalone source (run in a clean namespace, with the saved weights) and the ONNX file (run by
onnxruntime) give the original model's outputs."""
from __future__ import annotations

import ast
import json

import numpy as np
import onnxruntime
import pytest
import torch

from evaluators.networks import build_model
from evaluators.evaluate import evaluate
from evaluators.model_files import export_files, load_weights
from evaluators.model_source import describe, standalone_source

from .conftest import TINY


def _trained(genome, space, dataset="digits"):
    """A model whose weights and BatchNorm statistics differ from any fresh initialisation."""
    torch.manual_seed(5)
    model = build_model(genome, space, dataset)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(3):
        loss = model(torch.randn(8, 1, 8, 8)).logsumexp(1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


def _load_standalone(source: str, weights) -> torch.nn.Module:
    namespace: dict = {"__name__": "exported_model"}
    exec(compile(source, "model.py", "exec"), namespace)
    net = namespace["build"]()
    assert type(net).__name__ == "Net" and isinstance(net, torch.nn.Module)
    net.load_state_dict(weights)
    return net.eval()


@pytest.mark.parametrize("name", sorted(TINY))
def test_standalone_source_imports_only_torch_and_reproduces_the_model(name, tmp_path):
    genome, space = TINY[name]
    source = standalone_source(genome, space, "digits")
    imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(source))
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(ast.parse(source))
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= {"torch"}, imported
    model = _trained(genome, space)
    torch.save(model.state_dict(), tmp_path / "w.pt")
    net = _load_standalone(source, torch.load(tmp_path / "w.pt", weights_only=True))
    x = torch.randn(5, 1, 8, 8)
    with torch.no_grad():
        assert torch.equal(net(x), model(x))


@pytest.mark.parametrize("name", ["cell", "pelee"])
def test_export_files_give_the_same_outputs(name, tmp_path):
    genome, space = TINY[name]
    model = _trained(genome, space)
    paths = export_files(genome, space, "digits", tmp_path, model.state_dict())
    assert [p.name for p in paths] == ["genome.json", "model.py", "weights.pt", "model.onnx"]
    assert json.loads((tmp_path / "genome.json").read_text())["genome"] == genome
    x = torch.randn(7, 1, 8, 8)
    with torch.no_grad():
        expected = model(x).numpy()
        standalone = _load_standalone((tmp_path / "model.py").read_text(), load_weights(tmp_path / "weights.pt"))
        assert np.array_equal(standalone(x).numpy(), expected)
    session = onnxruntime.InferenceSession(str(tmp_path / "model.onnx"), providers=["CPUExecutionProvider"])
    (onnx_out,) = session.run(None, {"images": x.numpy()})
    np.testing.assert_allclose(onnx_out, expected, atol=1e-4, rtol=1e-3)


def test_evaluate_exports_the_trained_weights(tmp_path):
    genome, space = TINY["chain"]
    result = evaluate(genome, space, {"epochs": 2, "learning_rate": 0.003}, "digits", "cpu", export_to=tmp_path)
    assert result.status == "ok" and "export_error" not in result.metrics
    assert sorted(result.artifacts) == ["genome.json", "model.onnx", "model.py", "weights.pt"]
    net = _load_standalone((tmp_path / "model.py").read_text(), load_weights(tmp_path / "weights.pt"))
    from sklearn.datasets import load_digits

    from evaluators.datasets import load_dataset, split_indices

    data = load_dataset("digits", "cpu", 0)
    # The exported network takes raw digits (0..16, as scikit-learn loads them) and normalises them itself.
    raw = load_digits().images[:, None].astype(np.float32)
    _, held_out = split_indices(len(raw), 0.2, 0)
    raw_val = torch.from_numpy(raw[held_out])
    with torch.no_grad():
        accuracy = float((net(raw_val).argmax(1) == data.val_y).float().mean())
    assert accuracy == pytest.approx(result.fitness, abs=1e-6)  # what the evaluation reported (float32 mean)
    assert accuracy > 0.5  # the trained weights, not a fresh initialisation
    session = onnxruntime.InferenceSession(str(tmp_path / "model.onnx"), providers=["CPUExecutionProvider"])
    (onnx_out,) = session.run(None, {"images": raw_val[:16].numpy()})
    with torch.no_grad():
        np.testing.assert_allclose(onnx_out, net(raw_val[:16]).numpy(), atol=1e-4, rtol=1e-3)


def test_describe_lists_every_layer():
    genome, space = TINY["pelee"]
    summary = describe(genome, space, "digits")
    assert summary["params"] == sum(p.numel() for p in build_model(genome, space, "digits").parameters())
    assert [row["block"] for row in summary["layers"]] == [
        "stem", "dense", "transition", "dense", "dense", "transition", "classifier"]
    assert summary["layers"][1]["label"] == "dense 2-way +8" and summary["description"] == "2 stages: 2x1@8 | 1x2@8"
    json.dumps(summary)
