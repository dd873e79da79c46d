"""The supernet of the ``cell`` space: every candidate operation of every edge held once, and ``forward(x,
path)`` where a path is a genome of the space.

Its skeleton is the stand-alone network's (``evaluators.builders.cell_spec``: stem, stages of cells, residual
reductions, classifier): only the cells differ, each holding every op of every edge (``ops.edge_ItoJ.<op>``)
where a stand-alone cell holds one (``ops.edge_ItoJ``). So :func:`path_state_dict` renames a path's weights
into the stand-alone network's, and a path exports, trains on or runs as any genome does.

Why only ``cell``: ``nas.oneshot.supernet_support`` says, in words, why ``chain`` and ``pelee`` cannot be held.
"""
from __future__ import annotations

import re
from typing import Any

import torch
from torch import nn

from evaluators.blocks import BLOCKS, CELL_OPS
from evaluators.builders import architecture, as_space
from nas.oneshot.paths import path_for_step
from nas.oneshot.support import check_supernet_space
from nas.spaces import SearchSpace
from nas.spaces.cell import EDGES, OPS

#: The ops of an edge that hold a module (``none`` is left out of a node's sum, as in ``blocks.Cell``).
HELD_OPS = tuple(op for op in OPS if op != "none")
_EDGE_ORDER = [(int(key.split("<-")[1]), int(key.split("<-")[0]), key) for key in sorted(EDGES)]
_OP_KEY = re.compile(r"^(layers\.\d+\.ops\.edge_\dto\d)\.([a-z_0-9]+)\.(.+)$")


class SuperCell(nn.Module):
    """A cell holding every op of every edge; :meth:`forward` runs the ops a path chooses, summed as
    ``blocks.Cell`` sums them (same order, same zeros for a node with no edge), so the output is the
    stand-alone cell's with the same weights."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.ops = nn.ModuleDict({
            f"edge_{i}to{j}": nn.ModuleDict({op: CELL_OPS[op](channels) for op in HELD_OPS}) for i, j, _ in _EDGE_ORDER
        })

    def forward(self, x: torch.Tensor, edges: dict[str, str]) -> torch.Tensor:
        nodes = [x]
        for target in range(1, 4):
            inputs = [self.ops[f"edge_{i}to{j}"][edges[key]](nodes[i])
                      for i, j, key in _EDGE_ORDER if j == target and edges[key] != "none"]
            node = inputs[0] if inputs else x * 0.0
            for extra in inputs[1:]:
                node = node + extra
            nodes.append(node)
        return nodes[3]


class SuperNet(nn.Module):
    """The supernet of ``space`` (a ``cell`` space) for ``dataset``'s images; ``forward(x, path)``.

    ``path`` is a genome of the space; it is not validated at every step (``space.validate`` it once where it
    comes from outside)."""

    def __init__(self, space: SearchSpace | dict[str, Any], dataset: str) -> None:
        super().__init__()
        self.space = as_space(space)
        check_supernet_space(self.space)
        self.dataset = dataset
        reference = {"edges": {edge: "conv_3x3" for edge in EDGES}}
        self.spec = architecture(reference, self.space, dataset)
        self.layers = nn.ModuleList([
            SuperCell(layer["args"]["channels"]) if layer["block"] == "cell" else BLOCKS[layer["block"]](**layer["args"])
            for layer in self.spec["layers"]
        ])

    def forward(self, x: torch.Tensor, path: dict[str, Any]) -> torch.Tensor:
        edges = path["edges"]
        for layer in self.layers:
            x = layer(x, edges) if isinstance(layer, SuperCell) else layer(x)
        return x


def path_state_dict(state: dict[str, torch.Tensor], path: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The stand-alone network's ``state_dict`` of ``path`` (``evaluators.networks.build_model(path, ...)``
    loads it strictly), from a supernet's: each cell keeps its path's op of every edge, the rest is shared."""
    chosen = {f"edge_{i}to{j}": path["edges"][key] for i, j, key in _EDGE_ORDER}
    out: dict[str, torch.Tensor] = {}
    for name, value in state.items():
        match = _OP_KEY.match(name)
        if match is None:
            out[name] = value
            continue
        prefix, op, rest = match.groups()
        if chosen[prefix.rsplit(".", 1)[1]] == op:
            out[f"{prefix}.{rest}"] = value
    return out


def batch_norms(model: nn.Module) -> list[nn.modules.batchnorm._BatchNorm]:
    """Every batch-norm layer of ``model``."""
    return [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]


class PathSampling(nn.Module):
    """The module a supernet's training loop calls: in training mode each call is one step, run on the path
    ``nas.oneshot.path_for_step(space, seed, step)`` (then ``step`` advances); in eval mode it runs
    ``eval_path``.

    The path is a function of ``(seed, step)`` alone, so every rank of a gang samples the same path at the same
    step: DistributedDataParallel then finds the same parameters unused on every rank (``unused_parameters``
    tells ``evaluators.ranks.Gang`` to look for them), they get no gradient anywhere, and the step is the
    one-device step. Sampling per rank would average gradients of different sub-networks.
    """

    #: Some parameters are unused at each step (``evaluators.ranks.Gang.wrap`` reads this).
    unused_parameters = True

    def __init__(self, supernet: SuperNet, seed: int, step: int = 0) -> None:
        super().__init__()
        self.supernet = supernet
        self.seed = seed
        self.step = step
        self.eval_path: dict[str, Any] | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            path = path_for_step(self.supernet.space, self.seed, self.step)
            self.step += 1
        else:
            if self.eval_path is None:
                raise RuntimeError("PathSampling in eval mode needs an `eval_path`")
            path = self.eval_path
        return self.supernet(x, path)
