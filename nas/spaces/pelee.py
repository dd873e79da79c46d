"""EA-Pelee (seed 000): a PeleeNet of 4 stages, each gene ``[dense ways, dense layers, growth rate]``.

The macro-structure is fixed: a stem, then the stages, each a run of dense layers followed by a transition
without compression. A 2-way dense layer has a 3x3 branch and a two-3x3 branch; a 1-way layer only the first.
Table 4 of the paper gives the gene ranges: ways in {1, 2}, layers in [1, 10], growth rate in {8, 16, 32}.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from nas.operators.crossover import one_point_crossover
from nas.operators.mutation import choose, resample_genes
from nas.spaces import _checks as check
from nas.spaces.base import Choose, Decision, Genome, SearchSpace

#: PeleeNet's own network (3, 4, 8 and 6 two-way dense layers, growth rate 32): a point of the default space.
PELEENET: Genome = {"stages": [[2, 3, 32], [2, 4, 32], [2, 8, 32], [2, 6, 32]]}

#: The names of the three genes of a stage, in genome order.
GENES = ("ways", "layers", "growth")


class PeleeSpace(SearchSpace):
    """Genome ``{"stages": [[ways, layers, growth], ...]}``: one ``[ways, layers, growth]`` list per stage.

    Args:
        stages: the number of stages (the paper: 4).
        ways: the allowed dense ways, a subset of ``[1, 2]``.
        layers: ``[low, high]``, the inclusive range of dense layers per stage (the paper: ``[1, 10]``).
        growth: the allowed growth rates (the paper: ``[8, 16, 32]``).
        gene_rate: the probability that a mutation resamples each gene; ``None`` means ``1 / genes`` (1/12:
            about 1.35 genes change on average). At least one gene always changes.
    """

    name = "pelee"

    def __init__(
        self,
        stages: int = 4,
        ways: Sequence[int] = (1, 2),
        layers: Sequence[int] = (1, 10),
        growth: Sequence[int] = (8, 16, 32),
        gene_rate: float | None = None,
    ) -> None:
        self.stages = check.check_int_param("stages", stages, high=check.MAX_MODULES)
        self.ways = check.check_values_param("ways", ways, allowed=(1, 2))
        self.layers = check.check_range_param("layers", layers)
        self.growth = check.check_values_param("growth", growth)
        self.gene_rate = check.check_rate_param("gene_rate", gene_rate)
        self._choices = [self.ways, list(range(self.layers[0], self.layers[1] + 1)), self.growth]
        if all(len(options) == 1 for options in self._choices):
            raise ValueError(
                f"`ways`, `layers` and `growth` each allow a single value, so the space holds one genome "
                f"(ways={self.ways}, layers={self.layers}, growth={self.growth})."
            )

    def sample(self, rng: np.random.Generator) -> Genome:
        return self._unflatten([choose(options, rng) for options in self._gene_choices()])

    def mutate(self, genome: Genome, rng: np.random.Generator) -> Genome:
        """Resample each gene with probability ``gene_rate`` (to a different value); at least one gene changes."""
        choices = self._gene_choices()
        rate = self.gene_rate if self.gene_rate is not None else 1.0 / len(choices)
        return self._unflatten(resample_genes(self._genes(genome), choices, rate, rng))

    def crossover(self, a: Genome, b: Genome, rng: np.random.Generator) -> tuple[Genome, Genome]:
        """One-point crossover over the ``3 * stages`` genes (the cut may fall inside a stage)."""
        first, second = one_point_crossover(self._genes(a), self._genes(b), rng)
        return self._unflatten(first), self._unflatten(second)

    def validate(self, genome: Genome) -> Genome:
        stages = check.check_dict(genome, "", ["stages"])["stages"]
        check.check_list(stages, "stages", self.stages, self.stages, "[ways, layers, growth] lists")
        for s, stage in enumerate(stages):
            field = f"stages[{s}]"
            check.check_list(stage, field, 3, 3, "integers [ways, layers, growth]")
            check.check_choice(stage[0], f"{field}[0]", self.ways)
            check.check_int(stage[1], f"{field}[1]", *self.layers)
            check.check_choice(stage[2], f"{field}[2]", self.growth)
        return genome

    def describe(self, genome: Genome) -> str:
        """``4 stages: 2x3@32 | 2x4@32 | ...``: per stage, ways x layers @ growth rate."""
        return f"{len(genome['stages'])} stages: " + " | ".join(f"{w}x{n}@{g}" for w, n, g in genome["stages"])

    def flatten(self, genome: Genome) -> dict[str, int | float | str]:
        """Columns ``s1_ways, s1_layers, s1_growth, s2_ways, ...`` (stages numbered from 1)."""
        return {
            f"s{s + 1}_{gene}": value for s, stage in enumerate(genome["stages"]) for gene, value in zip(GENES, stage)
        }

    def params(self) -> dict[str, Any]:
        return {
            "stages": self.stages,
            "ways": list(self.ways),
            "layers": list(self.layers),
            "growth": list(self.growth),
            "gene_rate": self.gene_rate,
        }

    def spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": (
                f"PeleeNet of {self.stages} stages (EA-Pelee, seed 000): each stage's dense ways, dense layers and "
                f"growth rate; the stem and the transitions without compression are fixed."
            ),
            "genome": '{"stages": [[ways, layers, growth], ...]} (one list per stage)',
            "genes": {
                "ways": {"choices": list(self.ways)},
                "layers": {"low": self.layers[0], "high": self.layers[1]},
                "growth": {"choices": list(self.growth)},
            },
            "params": self.params(),
            "size": math.prod(len(options) for options in self._choices) ** self.stages,
        }

    def decisions(self) -> list[Decision]:
        """Per stage, its ways, layers (a range) and growth rate, named as :meth:`flatten`'s columns."""
        return [
            Decision(f"s{s + 1}_{gene}", tuple(options), ordered=gene == "layers")
            for s in range(self.stages) for gene, options in zip(GENES, self._choices)
        ]

    def compose(self, choose: Choose) -> Genome:
        return self._unflatten([choose(decision) for decision in self.decisions()])

    def _gene_choices(self) -> list[list[int]]:
        return self._choices * self.stages

    def _genes(self, genome: Genome) -> list[int]:
        return [value for stage in genome["stages"] for value in stage]

    def _unflatten(self, genes: list[int]) -> Genome:
        return {"stages": [list(genes[i : i + 3]) for i in range(0, len(genes), 3)]}
