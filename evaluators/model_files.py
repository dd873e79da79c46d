"""The files of one trained architecture: its genome, the standalone source (``evaluators.model_source``), its
weights and ONNX (which take the dataset's raw images and normalise them themselves, as ``model.py`` does).

Written by the evaluation worker that trained it (PyTorch); the web process only zips stored bytes and never
imports this module.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, BinaryIO

from evaluators.builders import as_space
from evaluators.model_source import exported_spec, standalone_source

__all__ = ["export_files", "export_onnx", "kept_files", "load_weights", "save_weights"]


def save_weights(state_dict: dict[str, Any], path: Path | BinaryIO) -> Path | BinaryIO:
    """Tensors only (``torch.save`` of a flat dict of CPU tensors, to a path or a binary file), so
    ``torch.load(weights_only=True)`` reads it."""
    import torch

    torch.save({key: value.detach().cpu() for key, value in state_dict.items()}, path)
    return path


def load_weights(path: Path | BinaryIO) -> dict[str, Any]:
    """A state_dict saved by :func:`save_weights`, loaded without unpickling code."""
    import torch

    return torch.load(path, map_location="cpu", weights_only=True)


def _onnx_export(model: Any, example: Any, path: Path) -> None:
    """TorchScript's exporter when this torch still has it (well under a second for our networks), else the
    dynamo exporter (seconds per network on a CPU; the only one in newer torch)."""
    import warnings

    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its deprecation notice, once per process, is not the user's business
            torch.onnx.export(model, (example,), str(path), input_names=["images"], output_names=["logits"],
                              dynamic_axes={"images": {0: "batch"}, "logits": {0: "batch"}}, dynamo=False)
        return
    except Exception:  # removed, or unable to trace this network: the dynamo exporter
        path.unlink(missing_ok=True)
    torch.onnx.export(model, (example,), str(path), input_names=["images"], output_names=["logits"],
                      dynamic_shapes=({0: torch.export.Dim.DYNAMIC},), external_data=False, dynamo=True,
                      verbose=False, report=False)


def export_onnx(model: Any, shape: tuple[int, ...], path: Path, check: bool = True, atol: float = 1e-4) -> Path:
    """The model as ONNX with a dynamic batch axis (input ``images``, output ``logits``); with ``check``, the file
    is run by onnxruntime on a random batch and compared with the model (``AssertionError`` if it differs)."""
    import torch

    model = model.eval().cpu()
    example = torch.randn(2, *shape, generator=torch.Generator().manual_seed(0))
    _onnx_export(model, example, path)
    if check:
        import numpy as np
        import onnxruntime

        batch = torch.randn(3, *shape, generator=torch.Generator().manual_seed(1))
        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        (got,) = session.run(["logits"], {"images": batch.numpy()})
        with torch.no_grad():
            expected = model(batch).numpy()
        if not np.allclose(got, expected, atol=atol, rtol=1e-3):
            raise AssertionError(f"the ONNX model differs from the PyTorch model by {np.abs(got - expected).max():.3g}")
    return path


def export_files(genome: Any, space: Any, dataset: str, folder: str | Path,
                 state_dict: dict[str, Any] | None = None,
                 normalization: dict[str, list[float]] | None = None) -> list[Path]:
    """Write ``genome.json``, ``model.py``, ``weights.pt`` (when ``state_dict`` is given) and ``model.onnx``
    (with those weights, else the random initialisation; checked by running it) into ``folder``; the paths.
    With ``normalization``, ``model.py`` and ``model.onnx`` take raw images and normalise them themselves."""
    import torch

    from evaluators import blocks

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    space = as_space(space)
    spec = exported_spec(genome, space, dataset, normalization)
    document = {"genome": genome, "space": {"name": space.name, **space.params()}, "dataset": dataset,
                "description": space.describe(genome), "normalization": normalization}
    paths = [folder / "genome.json", folder / "model.py"]
    paths[0].write_text(json.dumps(document, indent=2) + "\n")
    paths[1].write_text(standalone_source(genome, space, dataset, normalization))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = blocks.Net(spec)
    if state_dict is not None:
        paths.append(save_weights(state_dict, folder / "weights.pt"))
        model.load_state_dict(load_weights(folder / "weights.pt"))
    paths.append(export_onnx(model, tuple(spec["input"]), folder / "model.onnx"))
    return paths


def kept_files(genome: Any, space: Any, dataset: str, weights: bytes,
               normalization: dict[str, list[float]] | None) -> tuple[dict[str, bytes], str | None]:
    """What a worker keeps of a trained network, name -> bytes: ``weights.pt`` (the given bytes), ``model.py``
    and ``model.onnx`` (raw images in when ``normalization`` is given); and what went wrong, if anything (a
    failed ONNX export leaves it out, the rest stands)."""
    import io
    import tempfile

    files = {"weights.pt": weights, "model.py": standalone_source(genome, space, dataset, normalization).encode()}
    try:
        from evaluators import blocks

        spec = exported_spec(genome, space, dataset, normalization)
        model = blocks.Net(spec)
        model.load_state_dict(load_weights(io.BytesIO(weights)))
        with tempfile.TemporaryDirectory() as scratch:
            path = export_onnx(model, tuple(spec["input"]), Path(scratch) / "model.onnx")
            files["model.onnx"] = path.read_bytes()
    except Exception as error:  # the architecture is still kept, without its ONNX
        return files, f"ONNX export failed: {type(error).__name__}: {error}"
    return files, None
