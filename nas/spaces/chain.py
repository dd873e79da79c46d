"""The chain space (seed 004): a linear module of convolutions, repeated with reductions between repeats.

Each layer is a ``kernel`` x ``kernel`` convolution (3 or 5) with ``filters`` output channels (16, 32, 64 or
128), "same" padding and a ReLU. The builder repeats the module ``modules`` times and puts a reduction between
two repeats: a 1x1 convolution that doubles the filters, then a 2x2 max-pool of stride 2 (so ``modules - 1``
reductions; digits' 8x8 images allow at most 3).
"""
from __future__ import annotations

import copy
import itertools
from typing import Any

import numpy as np

from nas.operators.crossover import one_point_crossover
from nas.operators.mutation import choose, replace_at, resample_gene
from nas.spaces import _checks as check
from nas.spaces.base import Choose, Decision, Genome, SearchSpace

KERNELS = (3, 5)
FILTERS = (16, 32, 64, 128)
#: Every possible layer, the choices a layer is resampled from.
LAYERS: tuple[dict[str, int], ...] = tuple(
    {"kernel": kernel, "filters": filters} for kernel, filters in itertools.product(KERNELS, FILTERS)
)
REDUCTION = "1x1 conv doubling the filters, then 2x2 max-pool with stride 2"


class ChainSpace(SearchSpace):
    """Genome ``{"layers": [{"kernel": 3 | 5, "filters": 16 | 32 | 64 | 128}, ...]}``, the layers of one module.

    Args:
        max_layers: the most layers a module may have (seed 004 leaves it to the user).
        min_layers: the fewest layers a module may have.
        modules: how many times the builder repeats the module (stacking information; not part of the genome).
    """

    name = "chain"

    def __init__(self, max_layers: int = 8, min_layers: int = 1, modules: int = 3) -> None:
        self.max_layers = check.check_int_param("max_layers", max_layers, high=check.MAX_LAYERS)
        self.min_layers = check.check_int_param("min_layers", min_layers, high=check.MAX_LAYERS)
        self.modules = check.check_int_param("modules", modules, high=check.MAX_MODULES)
        if self.min_layers > self.max_layers:
            raise ValueError(
                f"`min_layers` must be smaller than or equal to `max_layers` "
                f"(min_layers={min_layers}, max_layers={max_layers})."
            )

    def sample(self, rng: np.random.Generator) -> Genome:
        """A module whose length is uniform in ``[min_layers, max_layers]``, each layer uniform over :data:`LAYERS`."""
        length = int(rng.integers(self.min_layers, self.max_layers + 1))
        return {"layers": [choose(LAYERS, rng) for _ in range(length)]}

    def mutate(self, genome: Genome, rng: np.random.Generator) -> Genome:
        """Append a random layer (seed 004); a module already at ``max_layers`` instead has one random layer
        replaced by a different one. Either way the child differs from its parent."""
        layers = genome["layers"]
        if len(layers) < self.max_layers:
            return {"layers": copy.deepcopy(layers) + [choose(LAYERS, rng)]}
        index = int(rng.integers(len(layers)))
        return {"layers": replace_at(layers, index, resample_gene(LAYERS, layers[index], rng))}

    def crossover(self, a: Genome, b: Genome, rng: np.random.Generator) -> tuple[Genome, Genome]:
        """Seed 004's PRODUCEOFFSPRING without its final mutation: parents of equal length are cut at one random
        point and swap tails (one-layer parents come back as copies); parents of unequal length are each mutated.
        Children are never longer than ``max_layers``."""
        if len(a["layers"]) != len(b["layers"]):
            return self.mutate(a, rng), self.mutate(b, rng)
        first, second = one_point_crossover(a["layers"], b["layers"], rng)
        return {"layers": first}, {"layers": second}

    def validate(self, genome: Genome) -> Genome:
        layers = check.check_dict(genome, "", ["layers"])["layers"]
        check.check_list(layers, "layers", self.min_layers, self.max_layers, "{kernel, filters} layers")
        for i, layer in enumerate(layers):
            field = f"layers[{i}]"
            check.check_dict(layer, field, ["kernel", "filters"])
            check.check_choice(layer["kernel"], f"{field}.kernel", KERNELS)
            check.check_choice(layer["filters"], f"{field}.filters", FILTERS)
        return genome

    def describe(self, genome: Genome) -> str:
        """``3 modules of 2 layers: 3x3/32 > 5x5/64``: kernel and filters of each layer of the module."""
        layers = genome["layers"]
        convs = " > ".join(f"{layer['kernel']}x{layer['kernel']}/{layer['filters']}" for layer in layers)
        modules, count = self.modules, len(layers)
        return f"{modules} module{'s' * (modules != 1)} of {count} layer{'s' * (count != 1)}: {convs}"

    def flatten(self, genome: Genome) -> dict[str, int | float | str]:
        """Columns ``n_layers, l1_kernel, l1_filters, ...`` up to ``max_layers``; absent layers are ``""``."""
        layers = genome["layers"]
        row: dict[str, int | float | str] = {"n_layers": len(layers)}
        for i in range(self.max_layers):
            for gene in ("kernel", "filters"):
                row[f"l{i + 1}_{gene}"] = layers[i][gene] if i < len(layers) else ""
        return row

    def decisions(self) -> list[Decision]:
        """The module's length (a range), then each layer's kernel and filters, named as :meth:`flatten`'s
        columns; a layer's decisions are asked only when the length reaches it."""
        layers = [Decision(f"l{i + 1}_{gene}", choices) for i in range(self.max_layers)
                  for gene, choices in (("kernel", KERNELS), ("filters", FILTERS))]
        return [Decision("n_layers", tuple(range(self.min_layers, self.max_layers + 1)), ordered=True), *layers]

    def compose(self, choose: Choose) -> Genome:
        length, *genes = self.decisions()
        count = choose(length)
        return {"layers": [{"kernel": choose(genes[2 * i]), "filters": choose(genes[2 * i + 1])} for i in range(count)]}

    def params(self) -> dict[str, Any]:
        return {"max_layers": self.max_layers, "min_layers": self.min_layers, "modules": self.modules}

    def spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": (
                f"A chain of {self.min_layers} to {self.max_layers} convolutions (seed 004), repeated {self.modules} "
                f"times with a reduction ({REDUCTION}) between repeats."
            ),
            "genome": '{"layers": [{"kernel": k, "filters": f}, ...]} (the layers of one module)',
            "genes": {
                "n_layers": {"low": self.min_layers, "high": self.max_layers},
                "kernel": {"choices": list(KERNELS)},
                "filters": {"choices": list(FILTERS)},
            },
            "modules": self.modules,
            "reductions": self.modules - 1,
            "reduction": REDUCTION,
            "params": self.params(),
            "size": sum(len(LAYERS) ** n for n in range(self.min_layers, self.max_layers + 1)),
        }
