"""The building blocks of every space, by name, and ``Net``, the one network that stacks them from data.

A network is described by a spec, ``{"input": [C, H, W], "classes": n, "layers": [{"block": name, "args":
{...}}, ...]}`` (``evaluators.builders`` writes it from a genome); ``Net(spec)`` builds ``BLOCKS[name](**args)``
for each layer and runs them in order. Every block's arguments are explicit (channels in and out, strides), so a
spec alone fixes the architecture.

This module imports nothing but torch: ``evaluators.model_files`` copies its source, verbatim, into the standalone
``model.py`` of an exported architecture, which must run without this project.
"""
from __future__ import annotations

import torch
from torch import nn


def conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, relu: bool = True) -> nn.Sequential:
    """Conv (``same`` padding, no bias) -> BatchNorm [-> ReLU]."""
    layers = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, bias=False), nn.BatchNorm2d(cout)]
    if relu:
        layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def relu_conv_bn(cin: int, cout: int, kernel: int, stride: int = 1) -> nn.Sequential:
    """ReLU -> Conv -> BatchNorm, NAS-Bench-201's pre-activation order (the ReLU is not in place: a cell's node
    feeds several edges)."""
    return nn.Sequential(nn.ReLU(), nn.Conv2d(cin, cout, kernel, stride, kernel // 2, bias=False), nn.BatchNorm2d(cout))


class StemBlock(nn.Module):
    """PeleeNet's stem: a 3x3 conv, then a 1x1 -> 3x3 branch beside a max-pool, concatenated, then a 1x1 conv.
    The two strides shrink to 1 on small images (the builder decides)."""

    def __init__(self, cin: int, cout: int, stride_conv: int, stride_branch: int) -> None:
        super().__init__()
        self.conv = conv_bn(cin, cout, 3, stride_conv)
        self.branch = nn.Sequential(conv_bn(cout, cout // 2, 1), conv_bn(cout // 2, cout, 3, stride_branch))
        # ceil_mode keeps the pool's size equal to the strided conv's on odd sizes.
        self.pool = nn.MaxPool2d(stride_branch, stride_branch, ceil_mode=True)
        self.fuse = conv_bn(2 * cout, cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        return self.fuse(torch.cat([self.branch(x), self.pool(x)], 1))


class DenseLayer(nn.Module):
    """PeleeNet's dense layer: ``ways`` branches (a 1x1 -> 3x3 branch, and for 2 ways a 1x1 -> 3x3 -> 3x3 branch
    with the wider receptive field) whose outputs, ``growth`` channels in all, are concatenated to the input."""

    def __init__(self, cin: int, growth: int, ways: int, bottleneck: int) -> None:
        super().__init__()
        first = growth // 2 if ways == 2 else growth
        self.branch1 = nn.Sequential(conv_bn(cin, bottleneck, 1), conv_bn(bottleneck, first, 3))
        self.branch2 = None
        if ways == 2:
            second = growth - first
            self.branch2 = nn.Sequential(
                conv_bn(cin, bottleneck, 1), conv_bn(bottleneck, second, 3), conv_bn(second, second, 3)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outputs = [x, self.branch1(x)]
        if self.branch2 is not None:
            outputs.append(self.branch2(x))
        return torch.cat(outputs, 1)


def transition(channels: int, pool: bool) -> nn.Sequential:
    """PeleeNet's transition without compression: a 1x1 conv keeping the channels [-> 2x2 average pool]."""
    layers: list[nn.Module] = [conv_bn(channels, channels, 1)]
    if pool:
        layers.append(nn.AvgPool2d(2, 2))
    return nn.Sequential(*layers)


def max_pool(stride: int = 2) -> nn.MaxPool2d:
    """A ``stride`` x ``stride`` max-pool (the chain's reductions)."""
    return nn.MaxPool2d(stride, stride)


class Zero(nn.Module):
    """The ``none`` op: zeros shaped like its input (kept so the cell's node sums stay uniform)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 0.0


#: A cell edge's op by name, built for ``channels`` channels (NAS-Bench-201's five ops).
CELL_OPS = {
    "none": lambda channels: Zero(),
    "skip_connect": lambda channels: nn.Identity(),
    "conv_1x1": lambda channels: relu_conv_bn(channels, channels, 1),
    "conv_3x3": lambda channels: relu_conv_bn(channels, channels, 3),
    "avg_pool_3x3": lambda channels: nn.AvgPool2d(3, 1, 1, count_include_pad=False),
}


class Cell(nn.Module):
    """A 4-node DAG: node 0 is the input, node ``j`` sums ``op(node i)`` over its edges ``"j<-i"``, node 3 is the
    output. ``none`` edges are left out of the sums (a node with no other edge is zeros)."""

    def __init__(self, channels: int, edges: dict[str, str]) -> None:
        super().__init__()
        self.edges = [(int(key.split("<-")[1]), int(key.split("<-")[0]), op) for key, op in sorted(edges.items())]
        self.ops = nn.ModuleDict(
            {f"edge_{i}to{j}": CELL_OPS[op](channels) for i, j, op in self.edges if op != "none"}
        )
        live = {3}  # the nodes whose value reaches the output: an op into any other is never used in the loss
        for node in (2, 1):
            if any(i == node and j in live and op != "none" for i, j, op in self.edges):
                live.add(node)
        #: Whether some op's parameters get no gradient (it feeds a node that does not reach the output):
        #: DistributedDataParallel must then look for unused parameters (``evaluators.ranks.Gang.wrap``).
        self.unused_parameters = any(op != "none" and j not in live for i, j, op in self.edges)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nodes = [x]
        for target in range(1, 4):
            inputs = [self.ops[f"edge_{i}to{j}"](nodes[i]) for i, j, op in self.edges if j == target and op != "none"]
            node = inputs[0] if inputs else x * 0.0
            for extra in inputs[1:]:
                node = node + extra
            nodes.append(node)
        return nodes[3]


class ResidualReduction(nn.Module):
    """NAS-Bench-201's reduction between stages: a ResNet basic block of two ReLU-conv-BN, stride ``stride``,
    with an average-pool + 1x1 conv shortcut."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv_a = relu_conv_bn(cin, cout, 3, stride)
        self.conv_b = relu_conv_bn(cout, cout, 3)
        shortcut: list[nn.Module] = []
        if stride > 1:
            shortcut.append(nn.AvgPool2d(stride, stride, ceil_mode=True, count_include_pad=False))
        if stride > 1 or cin != cout:
            shortcut.append(nn.Conv2d(cin, cout, 1, bias=False))
        self.shortcut = nn.Sequential(*shortcut)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.shortcut(x) + self.conv_b(self.conv_a(x))


def classifier(cin: int, classes: int, preact: bool = False) -> nn.Sequential:
    """[BatchNorm -> ReLU ->] global average pool -> linear layer to the class logits."""
    layers: list[nn.Module] = [nn.BatchNorm2d(cin), nn.ReLU()] if preact else []
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


#: Every block a spec may name.
BLOCKS = {
    "conv_bn": conv_bn,
    "stem": StemBlock,
    "dense": DenseLayer,
    "transition": transition,
    "max_pool": max_pool,
    "cell": Cell,
    "residual_reduction": ResidualReduction,
    "classifier": classifier,
}


class Net(nn.Module):
    """The network of a spec: its layers, built by name from :data:`BLOCKS` and run in order.

    A spec with ``"normalize": {"mean": [...], "std": [...]}`` (one value per input channel) first normalises its
    input: ``(x - mean) / std``. Training feeds normalised images and leaves it out; an exported network has it,
    so it takes the dataset's raw images. The constants are not in the ``state_dict`` (trained weights load into
    either)."""

    def __init__(self, spec: dict) -> None:
        super().__init__()
        self.spec = spec
        self.layers = nn.Sequential(*[BLOCKS[layer["block"]](**layer["args"]) for layer in spec["layers"]])
        normalize = spec.get("normalize")
        self.normalizes = normalize is not None
        if normalize is not None:
            shape = (1, len(normalize["mean"]), 1, 1)
            self.register_buffer("mean", torch.tensor(normalize["mean"]).reshape(shape), persistent=False)
            self.register_buffer("std", torch.tensor(normalize["std"]).reshape(shape), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.normalizes:
            x = (x - self.mean) / self.std
        return self.layers(x)
