"""The cell space, shaped like NAS-Bench-201: a DAG of 4 nodes whose 6 edges each carry one operation.

Node 0 is the cell's input and node 3 its output; every edge ``i -> j`` (``i < j``) applies an operation to node
``i`` and node ``j`` sums its incoming edges. The builder stacks ``stages`` stages of ``cells_per_stage`` cells,
starting at ``channels`` channels and doubling them (with a stride-2 residual block) between stages.
"""
from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np

from nas.operators.crossover import swap_where
from nas.operators.mutation import choose
from nas.spaces import _checks as check
from nas.spaces.base import Choose, Decision, Genome, GenomeError, SearchSpace

OPS = ("none", "skip_connect", "conv_1x1", "conv_3x3", "avg_pool_3x3")
#: The edges as ``"to<-from"``, in NAS-Bench-201's order (by target node, then source node).
EDGES = ("1<-0", "2<-0", "2<-1", "3<-0", "3<-1", "3<-2")
NODES = 4


def _source_target(edge: str) -> tuple[int, int]:
    target, source = edge.split("<-")
    return int(source), int(target)


def _column(edge: str) -> str:
    return "edge_{}to{}".format(*_source_target(edge))


def is_connected(edges: Mapping[str, str]) -> bool:
    """True if some path from node 0 to node 3 has no ``"none"`` edge (else the output ignores the input)."""
    reached = {0}
    for edge in EDGES:  # ordered by target, so every source is settled before its targets
        source, target = _source_target(edge)
        if source in reached and edges[edge] != "none":
            reached.add(target)
    return NODES - 1 in reached


def to_arch_str(genome: Genome) -> str:
    """NAS-Bench-201's string, ``|conv_3x3~0|+|none~0|skip_connect~1|+|...|`` (``op~source``, one group per node)."""
    groups = [
        "|" + "|".join(f"{genome['edges'][f'{target}<-{source}']}~{source}" for source in range(target)) + "|"
        for target in range(1, NODES)
    ]
    return "+".join(groups)


def from_arch_str(text: str) -> Genome:
    """The genome of a NAS-Bench-201 string (not validated: call ``CellSpace().validate`` on it)."""
    edges = {}
    for target, group in enumerate(text.split("+"), start=1):
        for token in filter(None, group.split("|")):
            op, _, source = token.partition("~")
            edges[f"{target}<-{source}"] = op
    return {"edges": {edge: edges.get(edge) for edge in EDGES} | edges}


@functools.lru_cache(maxsize=1)
def _connected_count() -> int:
    return sum(is_connected(dict(zip(EDGES, ops))) for ops in itertools.product(OPS, repeat=len(EDGES)))


class CellSpace(SearchSpace):
    """Genome ``{"edges": {"1<-0": op, "2<-0": op, "2<-1": op, "3<-0": op, "3<-1": op, "3<-2": op}}``.

    A key ``"j<-i"`` is the edge from node ``i`` to node ``j``; every op is one of :data:`OPS`. A cell whose
    output is cut off from its input (every path has a ``"none"`` edge) is not in the space: :meth:`validate`
    rejects it and :meth:`sample`, :meth:`mutate` and :meth:`crossover` never return one.

    Args:
        cells_per_stage: cells per stage of the network (stacking information for the builder).
        stages: stages of the network, with a reduction between two stages.
        channels: channels of the first stage; each later stage doubles them.
    """

    name = "cell"

    def __init__(self, cells_per_stage: int = 2, stages: int = 3, channels: int = 16) -> None:
        self.cells_per_stage = check.check_int_param("cells_per_stage", cells_per_stage, high=check.MAX_MODULES)
        self.stages = check.check_int_param("stages", stages, high=check.MAX_MODULES)
        self.channels = check.check_int_param("channels", channels, high=check.MAX_CHANNELS)

    def sample(self, rng: np.random.Generator) -> Genome:
        """Each edge's op uniformly, drawn again while the cell is disconnected."""
        while True:
            edges = {edge: choose(OPS, rng) for edge in EDGES}
            if is_connected(edges):
                return {"edges": edges}

    def mutate(self, genome: Genome, rng: np.random.Generator) -> Genome:
        """Change one edge's op, uniformly among the single-edge changes that keep the cell connected."""
        edges = genome["edges"]
        changes = [
            (edge, op)
            for edge in EDGES
            for op in OPS
            if op != edges[edge] and is_connected({**edges, edge: op})
        ]
        edge, op = choose(changes, rng)
        return {"edges": {**edges, edge: op}}

    def crossover(self, a: Genome, b: Genome, rng: np.random.Generator) -> tuple[Genome, Genome]:
        """Uniform crossover over the 6 edges, conditioned on both children being connected: the swap mask is
        drawn uniformly among those (the identity mask always qualifies), as rejection sampling would."""
        ops_a = [a["edges"][edge] for edge in EDGES]
        ops_b = [b["edges"][edge] for edge in EDGES]
        differing = [i for i in range(len(EDGES)) if ops_a[i] != ops_b[i]]
        pairs = []
        for bits in itertools.product((False, True), repeat=len(differing)):
            mask = [False] * len(EDGES)
            for i, bit in zip(differing, bits):
                mask[i] = bit
            first, second = swap_where(ops_a, ops_b, mask)
            if is_connected(dict(zip(EDGES, first))) and is_connected(dict(zip(EDGES, second))):
                pairs.append((first, second))
        first, second = choose(pairs, rng)
        return {"edges": dict(zip(EDGES, first))}, {"edges": dict(zip(EDGES, second))}

    def validate(self, genome: Genome) -> Genome:
        edges = check.check_dict(genome, "", ["edges"])["edges"]
        check.check_dict(edges, "edges", EDGES)
        for edge in EDGES:
            check.check_choice(edges[edge], f"edges.{edge}", OPS)
        if not is_connected(edges):
            raise GenomeError(
                "edges", edges, "a path of ops other than 'none' from node 0 (input) to node 3 (output); "
                "in this cell every path is cut by a 'none' edge, so the output ignores the input"
            )
        return genome

    def describe(self, genome: Genome) -> str:
        """NAS-Bench-201's architecture string (see :func:`to_arch_str`)."""
        return to_arch_str(genome)

    def flatten(self, genome: Genome) -> dict[str, int | float | str]:
        """Columns ``edge_0to1, edge_0to2, edge_1to2, edge_0to3, edge_1to3, edge_2to3``, each an op name."""
        return {_column(edge): genome["edges"][edge] for edge in EDGES}

    def decisions(self) -> list[Decision]:
        """Each edge's op, named as :meth:`flatten`'s columns."""
        return [Decision(_column(edge), OPS) for edge in EDGES]

    def compose(self, choose: Choose) -> Genome | None:
        """The cell of the chosen ops; ``None`` when every path from its input to its output has a ``none``."""
        edges = {edge: choose(decision) for edge, decision in zip(EDGES, self.decisions())}
        return {"edges": edges} if is_connected(edges) else None

    def params(self) -> dict[str, Any]:
        return {"cells_per_stage": self.cells_per_stage, "stages": self.stages, "channels": self.channels}

    def spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": (
                f"A NAS-Bench-201 cell (4 nodes, 6 edges, one op per edge), stacked {self.cells_per_stage} per "
                f"stage in {self.stages} stages from {self.channels} channels."
            ),
            "genome": '{"edges": {"1<-0": op, "2<-0": op, "2<-1": op, "3<-0": op, "3<-1": op, "3<-2": op}}',
            "genes": {edge: {"choices": list(OPS)} for edge in EDGES},
            "constraint": "some path from node 0 to node 3 has no 'none' edge",
            "params": self.params(),
            "size": _connected_count(),
        }
