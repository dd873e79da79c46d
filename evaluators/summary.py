"""What a spec costs, worked out by hand from the block definitions: each block's output shape, parameters and
multiply-accumulates (MACs of convolutions and linear layers, the "FLOPs" of the PeleeNet and NAS-Bench-201
papers). No torch: the dashboard describes architectures without loading PyTorch, and the tests check these
numbers against the built ``nn.Module`` (an independent second count).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

Shape = tuple[int, ...]
#: (output shape, parameters, MACs) of one block.
Cost = tuple[Shape, int, int]


def _ceil_div(size: int, stride: int) -> int:
    return -(-size // stride)


def _conv(cin: int, cout: int, kernel: int, size: tuple[int, int], stride: int = 1, bn: bool = True) -> Cost:
    """A ``same``-padded conv without bias (plus its BatchNorm's weight and bias when ``bn``)."""
    h, w = (size[0] + 2 * (kernel // 2) - kernel) // stride + 1, (size[1] + 2 * (kernel // 2) - kernel) // stride + 1
    weights = cin * cout * kernel * kernel
    return (cout, h, w), weights + (2 * cout if bn else 0), weights * h * w


def _chain(*costs: Cost) -> tuple[int, int]:
    return sum(c[1] for c in costs), sum(c[2] for c in costs)


def conv_bn(shape: Shape, cin: int, cout: int, kernel: int, stride: int = 1, relu: bool = True) -> Cost:
    return _conv(cin, cout, kernel, shape[1:], stride)


def stem(shape: Shape, cin: int, cout: int, stride_conv: int, stride_branch: int) -> Cost:
    first = _conv(cin, cout, 3, shape[1:], stride_conv)
    squeeze = _conv(cout, cout // 2, 1, first[0][1:])
    branch = _conv(cout // 2, cout, 3, squeeze[0][1:], stride_branch)
    fuse = _conv(2 * cout, cout, 1, branch[0][1:])
    return (fuse[0], *_chain(first, squeeze, branch, fuse))


def dense(shape: Shape, cin: int, growth: int, ways: int, bottleneck: int) -> Cost:
    size = shape[1:]
    first = growth // 2 if ways == 2 else growth
    costs = [_conv(cin, bottleneck, 1, size), _conv(bottleneck, first, 3, size)]
    if ways == 2:
        second = growth - first
        costs += [_conv(cin, bottleneck, 1, size), _conv(bottleneck, second, 3, size), _conv(second, second, 3, size)]
    return ((cin + growth, *size), *_chain(*costs))


def transition(shape: Shape, channels: int, pool: bool) -> Cost:
    conv = _conv(channels, channels, 1, shape[1:])
    out = (channels, shape[1] // 2, shape[2] // 2) if pool else conv[0]
    return out, conv[1], conv[2]


def max_pool(shape: Shape, stride: int = 2) -> Cost:
    return (shape[0], shape[1] // stride, shape[2] // stride), 0, 0


def cell(shape: Shape, channels: int, edges: dict[str, str]) -> Cost:
    kernels = {"conv_1x1": 1, "conv_3x3": 3}
    costs = [_conv(channels, channels, kernels[op], shape[1:]) for op in edges.values() if op in kernels]
    return (shape, *_chain(*costs))


def residual_reduction(shape: Shape, cin: int, cout: int, stride: int) -> Cost:
    conv_a = _conv(cin, cout, 3, shape[1:], stride)
    costs = [conv_a, _conv(cout, cout, 3, conv_a[0][1:])]
    if stride > 1 or cin != cout:
        costs.append(_conv(cin, cout, 1, conv_a[0][1:], bn=False))
    return (conv_a[0], *_chain(*costs))


def classifier(shape: Shape, cin: int, classes: int, preact: bool = False) -> Cost:
    return (classes,), cin * classes + classes + (2 * cin if preact else 0), cin * classes


#: The cost of each block of ``evaluators.blocks.BLOCKS``, by the same name and arguments.
COSTS: dict[str, Callable[..., Cost]] = {
    "conv_bn": conv_bn,
    "stem": stem,
    "dense": dense,
    "transition": transition,
    "max_pool": max_pool,
    "cell": cell,
    "residual_reduction": residual_reduction,
    "classifier": classifier,
}


def block_cost(block: str, args: dict[str, Any], shape: Shape) -> Cost:
    """The output shape, parameters and MACs of ``block`` built with ``args`` on an input of ``shape``."""
    return COSTS[block](tuple(shape), **args)


def _label(block: str, args: dict[str, Any]) -> str:
    """A short readable name of one layer, e.g. ``dense 2-way +32`` or ``conv 3x3 /2``."""
    if block == "conv_bn":
        return f"conv {args['kernel']}x{args['kernel']}" + (f" /{args['stride']}" if args.get("stride", 1) > 1 else "")
    if block == "dense":
        return f"dense {args['ways']}-way +{args['growth']}"
    if block == "transition":
        return "transition + avg-pool" if args["pool"] else "transition"
    if block == "cell":
        return "cell " + " ".join(f"{key}:{op}" for key, op in sorted(args["edges"].items()))
    if block == "residual_reduction":
        return f"residual reduction /{args['stride']}"
    if block == "max_pool":
        return f"max-pool /{args['stride']}"
    return block


def summarize(spec: dict[str, Any]) -> dict[str, Any]:
    """Totals and one row per layer of a spec: ``{"params", "macs", "input", "output", "layers": [{"index",
    "block", "label", "output", "params", "macs"}, ...]}``; JSON-ready."""
    shape: Shape = tuple(spec["input"])
    rows = []
    for index, layer in enumerate(spec["layers"]):
        shape, params, macs = block_cost(layer["block"], layer["args"], shape)
        rows.append({"index": index, "block": layer["block"], "label": _label(layer["block"], layer["args"]),
                     "output": list(shape), "params": params, "macs": macs})
    return {
        "params": sum(row["params"] for row in rows),
        "macs": sum(row["macs"] for row in rows),
        "input": list(spec["input"]),
        "output": list(shape),
        "layers": rows,
    }
