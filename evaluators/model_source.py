"""The standalone PyTorch source of one architecture (``model.py``), written as text: importing and calling this
module loads no torch, so the web server writes sources with it.

The source is ``evaluators/blocks.py`` copied verbatim (it imports only torch), then the architecture's spec as a
literal and ``build()``: the exported ``Net`` has the very same modules and ``state_dict`` keys as the evaluated
one, so saved weights load into it. With the training data's normalisation in its spec, the exported network takes
the dataset's raw images (``catalog.RAW_IMAGES``) and normalises them itself. ``evaluators.model_files`` writes
the files that need torch (weights, ONNX).
"""
from __future__ import annotations

import ast
import pprint
from pathlib import Path
from typing import Any

from evaluators.builders import architecture, as_space
from evaluators.builders import describe as describe_architecture
from evaluators.catalog import dataset_shape, label, raw_images

BLOCKS_FILE = Path(__file__).with_name("blocks.py")
#: ``run_schedule(net, schedule, x)``: the network run stage by stage from its ``schedule.json`` (torch only too).
SCHEDULE_FILE = Path(__file__).with_name("inference") / "standalone.py"

__all__ = ["describe", "exported_spec", "standalone_source"]

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
    raw = raw_images(dataset)[1] if normalization else "normalised with the training split's mean and std"
    title = f"{space.name} architecture for {label(dataset)}: {space.describe(genome)}"
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
