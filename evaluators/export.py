"""Exports of one architecture: its genome, a standalone PyTorch source file, its weights and ONNX.

Importing this module loads no torch (the web server describes architectures and writes sources with it); the
functions that build models import torch when called. The standalone source is ``evaluators/blocks.py`` copied
verbatim (it imports only torch), then the architecture's spec as a literal and ``build()``: the exported ``Net``
has the very same modules and ``state_dict`` keys as the evaluated one, so saved weights load into it.
"""
from __future__ import annotations

import ast
import json
import pprint
from pathlib import Path
from typing import Any, BinaryIO

from evaluators.builders import architecture, as_space
from evaluators.builders import describe as describe_architecture
from evaluators.catalog import dataset_shape

BLOCKS_FILE = Path(__file__).with_name("blocks.py")

__all__ = ["describe", "export_files", "export_onnx", "load_weights", "save_weights", "standalone_source"]

HEADER = '''"""{title}

Standalone PyTorch model exported by the NAS tool: it needs torch and nothing else.

    import torch
    from model import build
    net = build()
    net.load_state_dict(torch.load("weights.pt", weights_only=True))  # when weights were exported
    logits = net(torch.randn(1, {shape}))  # {classes} class logits
"""
'''


def describe(genome: Any, space: Any, dataset: str) -> dict[str, Any]:
    """Parameters, MACs and a readable per-layer summary (see ``evaluators.builders.describe``); no torch."""
    return describe_architecture(genome, space, dataset)


def _blocks_body() -> str:
    """``evaluators/blocks.py`` without its module docstring (the exported file has its own), read as text so
    that writing the source needs no torch."""
    source = BLOCKS_FILE.read_text()
    first = ast.parse(source).body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        source = "\n".join(source.splitlines()[first.end_lineno:]) + "\n"
    return source.lstrip("\n")


def standalone_source(genome: Any, space: Any, dataset: str) -> str:
    """Python source defining ``class Net(torch.nn.Module)`` and ``build()`` (returning the ``Net`` of this
    genome for ``dataset``'s images), importing only torch."""
    space = as_space(space)
    spec = architecture(genome, space, dataset)
    shape, classes = dataset_shape(dataset)
    title = f"{space.name} architecture for {dataset}: {space.describe(genome)}"
    parts = [
        HEADER.format(title=title.replace('"""', "'''"), shape=", ".join(map(str, shape)), classes=classes),
        _blocks_body().replace("from __future__ import annotations\n", "", 1).lstrip("\n"),
        "\n#: The architecture: the input shape, the classes and every layer's block and arguments.",
        f"SPEC = {pprint.pformat(spec, width=110, sort_dicts=False)}\n",
        "\ndef build() -> Net:",
        '    """The network of this architecture, randomly initialised."""',
        "    return Net(SPEC)\n",
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


def export_onnx(model: Any, shape: tuple[int, ...], path: Path, check: bool = True, atol: float = 1e-4) -> Path:
    """``torch.onnx.export`` with a dynamic batch axis (input ``images``, output ``logits``); with ``check``, the
    file is run by onnxruntime on a random batch and compared with the model (``AssertionError`` if it differs)."""
    import torch

    model = model.eval().cpu()
    example = torch.randn(2, *shape, generator=torch.Generator().manual_seed(0))
    torch.onnx.export(model, (example,), str(path), input_names=["images"], output_names=["logits"],
                      dynamic_shapes=({0: torch.export.Dim.DYNAMIC},), external_data=False, dynamo=True,
                      verbose=False, report=False)
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
                 state_dict: dict[str, Any] | None = None) -> list[Path]:
    """Write ``genome.json``, ``model.py``, ``weights.pt`` (when ``state_dict`` is given) and ``model.onnx``
    (with those weights, else the random initialisation; checked by running it) into ``folder``; the paths."""
    import torch

    from evaluators import blocks

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    space = as_space(space)
    spec = architecture(genome, space, dataset)
    document = {"genome": genome, "space": {"name": space.name, **space.params()}, "dataset": dataset,
                "description": space.describe(genome)}
    paths = [folder / "genome.json", folder / "model.py"]
    paths[0].write_text(json.dumps(document, indent=2) + "\n")
    paths[1].write_text(standalone_source(genome, space, dataset))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = blocks.Net(spec)
    if state_dict is not None:
        paths.append(save_weights(state_dict, folder / "weights.pt"))
        model.load_state_dict(load_weights(folder / "weights.pt"))
    paths.append(export_onnx(model, tuple(spec["input"]), folder / "model.onnx"))
    return paths
