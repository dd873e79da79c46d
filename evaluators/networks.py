"""An architecture's ``nn.Module``: the spec ``evaluators.builders`` writes (no torch) handed to the one generic
module that builds any spec (``evaluators.blocks.Net``)."""
from __future__ import annotations

from typing import Any

from torch import nn

from evaluators.blocks import Net
from evaluators.builders import architecture
from nas.spaces import SearchSpace


def build_model(genome: Any, space: SearchSpace | dict[str, Any], dataset: str) -> nn.Module:
    """The ``nn.Module`` of ``genome`` for ``dataset`` (randomly initialised from torch's current RNG state)."""
    return Net(architecture(genome, space, dataset))
