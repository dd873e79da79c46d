"""Exports of one architecture: its genome, a standalone PyTorch source file, its weights and ONNX.

Importing this module loads no torch (the web server writes sources with it); the functions that build models
import torch when called. The standalone source is ``evaluators/blocks.py`` copied verbatim (it imports only
torch), then the architecture's spec as a literal and ``build()``: the exported ``Net`` has the very same modules
and ``state_dict`` keys as the evaluated one, so saved weights load into it. With the training data's
normalisation in its spec, the exported network takes the dataset's raw images (``catalog.RAW_IMAGES``) and
normalises them itself, in ``model.py`` and in ``model.onnx`` alike.
"""
from __future__ import annotations

import ast
import json
import pprint
from pathlib import Path
from typing import Any, BinaryIO

from evaluators.builders import architecture, as_space
from evaluators.builders import describe as describe_architecture
from evaluators.catalog import RAW_IMAGES, dataset_shape

BLOCKS_FILE = Path(__file__).with_name("blocks.py")
#: ``run_schedule(net, schedule, x)``: the network run stage by stage from its ``schedule.json`` (torch only too).
SCHEDULE_FILE = Path(__file__).with_name("schedule") / "standalone.py"

__all__ = ["describe", "export_files", "export_onnx", "kept_files", "load_weights", "save_weights", "standalone_source"]

HEADER = '''"""{title}

Standalone PyTorch model exported by the NAS tool: it needs torch and nothing else.

    import torch
    from model import build
    net = build().eval()
    net.load_state_dict(torch.load("weights.pt", weights_only=True))  # when weights were exported
    logits = net(images)  # images: (N, {shape}), {raw}; {classes} class logits
"""
'''


def describe(genome: Any, space: Any, dataset: str) -> dict[str, Any]:
    """Parameters, MACs and a readable per-layer summary (see ``evaluators.builders.describe``); no torch."""
    return describe_architecture(genome, space, dataset)


def _blocks_body(path: Path = BLOCKS_FILE) -> str:
    """``evaluators/blocks.py`` (or another torch-only module) without its module docstring (the exported file
    has its own), read as text so that writing the source needs no torch."""
    source = path.read_text()
    first = ast.parse(source).body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        source = "\n".join(source.splitlines()[first.end_lineno:]) + "\n"
    return source.lstrip("\n")


def exported_spec(genome: Any, space: Any, dataset: str, normalization: dict[str, list[float]] | None) -> dict:
    """The architecture's spec with the input normalisation the exported network applies (none: normalised
    images in, as during training)."""
    spec = architecture(genome, as_space(space), dataset)
    return {**spec, "normalize": normalization} if normalization else spec


def standalone_source(genome: Any, space: Any, dataset: str, normalization: dict[str, list[float]] | None = None) -> str:
    """Python source defining ``class Net(torch.nn.Module)`` and ``build()`` (returning the ``Net`` of this
    genome for ``dataset``'s images: raw ones when ``normalization`` is given), importing only torch."""
    space = as_space(space)
    spec = exported_spec(genome, space, dataset, normalization)
    shape, classes = dataset_shape(dataset)
    raw = RAW_IMAGES[dataset][1] if normalization else "normalised with the training split's mean and std"
    title = f"{space.name} architecture for {dataset}: {space.describe(genome)}"
    parts = [
        HEADER.format(title=title.replace('"""', "'''"), shape=", ".join(map(str, shape)), classes=classes,
                      raw=raw),
        _blocks_body().replace("from __future__ import annotations\n", "", 1).lstrip("\n"),
        "\n#: The architecture: the input shape, the classes and every layer's block and arguments.",
        f"SPEC = {pprint.pformat(spec, width=110, sort_dicts=False)}\n",
        "\ndef build() -> Net:",
        '    """The network of this architecture, randomly initialised."""',
        "    return Net(SPEC)\n",
        "\n# Inference by a schedule (schedule.json, where the search measured latency): run_schedule(net, schedule, x)",
        _blocks_body(SCHEDULE_FILE).replace("from __future__ import annotations\n", "", 1)
        .replace("import torch\nfrom torch import nn\n", "", 1).lstrip("\n"),
    ]
    return "\n".join(parts)


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
