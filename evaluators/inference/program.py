"""The operator graph of a built network: which module runs on the sum of which values.

Every layer of a ``Net`` is one operator, except the multi-branch ones: a ``cell``'s edges are operators of their
own (NAS-Bench-201's cell is a DAG), and so are PeleeNet's branches (the stem's convolution branch and pool, a
dense layer's one or two branches, joined by a concatenation); the chain space is a chain of layers. A cell's ``skip_connect`` edges
are not operators: they only put a value into a node's sum, and ``none`` edges are left out, as the cell itself
does. So an operator's input is a sum of earlier operators' outputs (or of the network's input), with
multiplicity (a skip chain may add one value twice), or zeros shaped like a value when its node has no input.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from evaluators import summary
from evaluators.inference.standalone import network_operators
from nas.schedule import Op, OpGraph

#: The value name of the network's input.
INPUT = "input"
#: Cell edge ops that are kernels of their own (skip_connect and none are folded into the sums).
KERNEL_OPS = ("conv_1x1", "conv_3x3", "avg_pool_3x3")


@dataclasses.dataclass(frozen=True)
class Expression:
    """A sum of named values (with multiplicity); when empty, zeros shaped like ``like``. With ``join="cat"``,
    the values concatenated along the channels instead (PeleeNet's branches)."""

    terms: tuple[str, ...]
    like: str = INPUT
    join: str = "sum"

    def evaluate(self, values: dict[str, torch.Tensor]) -> torch.Tensor:
        if not self.terms:
            return torch.zeros_like(values[self.like])
        if self.join == "cat":
            return torch.cat([values[term] for term in self.terms], 1)
        total = values[self.terms[0]]
        for term in self.terms[1:]:
            total = total + values[term]
        return total

    def reads(self) -> set[str]:
        return set(self.terms) if self.terms else {self.like}


@dataclasses.dataclass(frozen=True)
class ProgramOp:
    """One operator: ``module`` applied to ``source``'s value. ``kind`` is the cell op or the block name,
    ``args`` what fixes its shape besides the input (for signatures)."""

    name: str
    module: Callable[[torch.Tensor], torch.Tensor]
    source: Expression
    kind: str
    args: str
    merge_group: str = ""


@dataclasses.dataclass
class Program:
    """The operators of a network in its own order, what the output is, and the input normalisation."""

    ops: list[ProgramOp]
    output: Expression
    normalize: Callable[[torch.Tensor], torch.Tensor] | None = None

    def by_name(self) -> dict[str, ProgramOp]:
        return {op.name: op for op in self.ops}


def network_program(model: nn.Module) -> Program:
    """The program of an ``evaluators.blocks.Net`` (any space), from
    :func:`evaluators.inference.standalone.network_operators` (the exported ``model.py`` reads the same names)."""
    operators, output, like = network_operators(model)
    ops = [ProgramOp(op["name"], op["module"], Expression(tuple(op["terms"]), op["like"], op["join"]), op["kind"],
                     _args_text(op["args"]), merge_group=f"{op['kind']}@{op['node']}" if op["node"] else "")
           for op in operators]
    normalize = None
    if getattr(model, "normalizes", False):
        normalize = lambda x: (x - model.mean) / model.std  # noqa: E731 - the Net's own first step
    return Program(ops, Expression(tuple(output), like), normalize)


def _args_text(args: dict[str, Any]) -> str:
    return ",".join(f"{key}={args[key]}" for key in sorted(args) if key != "edges")


@torch.no_grad()
def trace(program: Program, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """Run ``program`` once in its own order; every operator's input tensor, by operator name."""
    values = {INPUT: program.normalize(x) if program.normalize else x}
    inputs = {}
    for op in program.ops:
        inputs[op.name] = op.source.evaluate(values)
        values[op.name] = op.module(inputs[op.name])
    return inputs


def _work(op: ProgramOp, shape: tuple[int, ...]) -> float:
    """Multiply-accumulates per image (pools count one per window element)."""
    if op.kind in ("conv_1x1", "conv_3x3"):
        kernel = 1 if op.kind == "conv_1x1" else 3
        return float(shape[0] * shape[0] * kernel * kernel * shape[1] * shape[2])
    if op.kind == "avg_pool_3x3":
        return float(9 * shape[0] * shape[1] * shape[2])
    args = dict(item.split("=", 1) for item in op.args.split(",") if item)
    try:
        parsed = {key: _literal(value) for key, value in args.items()}
        return float(max(summary.block_cost(op.kind, parsed, shape)[2], 1))
    except Exception:  # a block summary cannot cost: equal weights are still a valid model
        return 1.0


def _literal(text: str) -> Any:
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        return text


def operator_graph(program: Program, inputs: dict[str, torch.Tensor]) -> OpGraph:
    """The scheduler's graph: each operator reads the values of its input's sum; its signature is its kind,
    arguments and input shape (per image), so equal operators of different networks share a profile."""
    ops = []
    for op in program.ops:
        shape = tuple(inputs[op.name].shape[1:])
        reads = tuple(sorted(op.source.reads() - {INPUT}))
        ops.append(Op(op.name, reads, kind=op.kind, signature=f"{op.kind}({op.args}) in={list(shape)}",
                      merge_group=op.merge_group if op.kind in KERNEL_OPS else "", work=_work(op, shape)))
    return OpGraph(ops)
