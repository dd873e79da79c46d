"""Genome -> network: one generic builder per space writes the architecture as data (a spec of named blocks
with explicit arguments, see ``evaluators.blocks``); ``evaluators.networks.build_model`` turns any spec into an
``nn.Module``.

Every builder adapts to the dataset: the input channels, the class count, and how many times the image may be
halved (a reduction is dropped, earliest first, when the image is already small: digits are 8x8).
No torch here: the web server describes architectures and writes their sources with this module.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from nas.spaces import SearchSpace, space_from_config
from nas.spaces.cell import EDGES

from evaluators import summary
from evaluators.catalog import dataset_shape

Spec = dict[str, Any]
#: PeleeNet's stem width and its per-stage bottleneck widths (a multiple of half the growth rate).
PELEE_STEM = 32
PELEE_BOTTLENECK = (1, 2, 4, 4)


class Plan:
    """A spec being written: adds blocks in order and tracks the shape after each (from ``evaluators.summary``)."""

    def __init__(self, input_shape: tuple[int, int, int], classes: int) -> None:
        self.input = list(input_shape)
        self.classes = classes
        self.shape: tuple[int, ...] = tuple(input_shape)
        self.layers: list[dict[str, Any]] = []

    @property
    def channels(self) -> int:
        return self.shape[0]

    @property
    def size(self) -> int:
        """The smaller side of the current feature map."""
        return min(self.shape[1:])

    def add(self, block: str, **args: Any) -> None:
        self.shape = summary.block_cost(block, args, self.shape)[0]
        self.layers.append({"block": block, "args": args})

    def spec(self) -> Spec:
        return {"input": self.input, "classes": self.classes, "layers": self.layers}


def _kept_reductions(size: int, positions: list[str], smallest: int = 2) -> set[str]:
    """The stride-2 reductions to keep, latest first, so the final map is at least ``smallest`` wide."""
    allowed = int(math.floor(math.log2(size / smallest))) if size >= smallest else 0
    return set(positions[max(0, len(positions) - allowed):]) if allowed > 0 else set()


def _pelee_bottleneck(cin: int, growth: int, stage: int) -> int:
    """PeleeNet's bottleneck width: ``growth / 2`` times the stage's factor, capped at half the input channels
    (rounded to multiples of 4, at least 4)."""
    width = int(growth / 2 * PELEE_BOTTLENECK[min(stage, len(PELEE_BOTTLENECK) - 1)] / 4) * 4
    if width > cin / 2:
        width = int(cin / 8) * 4
    return max(width, 4)


def pelee_spec(genome: Any, space: SearchSpace, plan: Plan) -> None:
    """PeleeNet: stem, then per stage ``layers`` dense layers of ``ways`` ways adding ``growth`` channels each,
    then a transition without compression (average-pooled except after the last stage), then the classifier."""
    stages = genome["stages"]
    positions = ["stem_conv", "stem_branch"] + [f"transition{s}" for s in range(len(stages) - 1)]
    kept = _kept_reductions(plan.size, positions)
    plan.add("stem", cin=plan.channels, cout=PELEE_STEM, stride_conv=2 if "stem_conv" in kept else 1,
             stride_branch=2 if "stem_branch" in kept else 1)
    for s, (ways, layers, growth) in enumerate(stages):
        for _ in range(layers):
            plan.add("dense", cin=plan.channels, growth=growth, ways=ways,
                     bottleneck=_pelee_bottleneck(plan.channels, growth, s))
        plan.add("transition", channels=plan.channels, pool=f"transition{s}" in kept)
    plan.add("classifier", cin=plan.channels, classes=plan.classes)


def chain_spec(genome: Any, space: SearchSpace, plan: Plan) -> None:
    """Seed 004's chain: the module's convolutions, repeated ``modules`` times; between two repeats a 1x1 conv
    doubling the channels and a 2x2 max-pool (skipped once the map is 1 pixel wide); then the classifier."""
    for module in range(space.modules):
        for layer in genome["layers"]:
            plan.add("conv_bn", cin=plan.channels, cout=layer["filters"], kernel=layer["kernel"], stride=1)
        if module < space.modules - 1:
            plan.add("conv_bn", cin=plan.channels, cout=2 * plan.channels, kernel=1, stride=1)
            if plan.size >= 2:
                plan.add("max_pool", stride=2)
    plan.add("classifier", cin=plan.channels, classes=plan.classes)


def cell_spec(genome: Any, space: SearchSpace, plan: Plan) -> None:
    """NAS-Bench-201's macro skeleton: a 3x3 conv stem, ``stages`` stages of ``cells_per_stage`` copies of the
    cell, a residual reduction doubling the channels between stages (stride 2 while the map is at least 4
    wide), then BN-ReLU and the classifier."""
    plan.add("conv_bn", cin=plan.channels, cout=space.channels, kernel=3, stride=1, relu=False)
    edges = {edge: genome["edges"][edge] for edge in EDGES}
    for stage in range(space.stages):
        if stage > 0:
            plan.add("residual_reduction", cin=plan.channels, cout=2 * plan.channels,
                     stride=2 if plan.size >= 4 else 1)
        for _ in range(space.cells_per_stage):
            plan.add("cell", channels=plan.channels, edges=dict(edges))
    plan.add("classifier", cin=plan.channels, classes=plan.classes, preact=True)


#: The builder of each space, by the space's registry name.
BUILDERS: dict[str, Callable[[Any, SearchSpace, Plan], None]] = {
    "pelee": pelee_spec,
    "chain": chain_spec,
    "cell": cell_spec,
}


def as_space(space: SearchSpace | dict[str, Any]) -> SearchSpace:
    """A space object from a space or its config dict (``{"name": "chain", ...}``)."""
    return space if isinstance(space, SearchSpace) else space_from_config(space)


def architecture(genome: Any, space: SearchSpace | dict[str, Any], dataset: str) -> Spec:
    """The spec of ``genome`` for ``dataset``'s images. Raises ``nas.spaces.GenomeError`` (a ``ValueError``)
    when the genome is not in the space, ``ValueError`` for an unknown dataset or space."""
    space = as_space(space)
    space.validate(genome)
    input_shape, classes = dataset_shape(dataset)
    plan = Plan(input_shape, classes)
    BUILDERS[space.name](genome, space, plan)
    return plan.spec()


def describe(genome: Any, space: SearchSpace | dict[str, Any], dataset: str) -> dict[str, Any]:
    """Parameters, MACs and one readable row per layer of ``genome``'s network for ``dataset``, plus the space's
    one-line description; JSON-ready, no torch."""
    space = as_space(space)
    spec = architecture(genome, space, dataset)
    return {"space": space.name, "dataset": dataset, "description": space.describe(genome), **summary.summarize(spec)}
