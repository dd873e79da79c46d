"""Running a ``Net`` stage by stage from a ``schedule.json``: the operators of a network and their inputs, and
:func:`run_schedule`.

This module imports nothing but torch: ``evaluators.model_files`` copies it, verbatim, into the standalone
``model.py`` (after ``evaluators/blocks.py``), so an exported network runs with its schedule without this project.
``evaluators.inference.program`` builds the scheduler's graph from the same :func:`network_operators`, so the
operator names of a schedule and of the network always agree: ``L<layer>.<block>`` for a layer run whole, and
``L<layer>.e<source><target>`` for an edge of a cell (``skip_connect`` and ``none`` edges are not operators: they
only add to, or leave out of, a node's sum), ``L<layer>.branch1``, ``.branch2``, ``.cat`` for a PeleeNet dense
layer and ``L<layer>.conv``, ``.branch``, ``.pool``, ``.fuse`` for its stem.
"""
from __future__ import annotations

import torch
from torch import nn


def network_operators(net: nn.Module) -> tuple[list[dict], list[str], str]:
    """The operators of ``net`` in its own order, each ``{"name", "module", "terms", "like", "join", "kind",
    "node", "args"}``: its input is the sum (``join="cat"``: the concatenation) of the values named in ``terms``
    (``"input"`` is the network's input), or zeros shaped like ``like`` when ``terms`` is empty; then the
    output's terms and ``like``."""
    operators: list[dict] = []
    current, like = ["input"], "input"

    def add(name: str, module: nn.Module, terms: list[str], kind: str, args: dict, join: str = "sum",
            node: str = "") -> str:
        operators.append({"name": name, "module": module, "terms": terms, "like": like, "join": join,
                          "kind": kind, "node": node, "args": args})
        return name

    for index, (layer, spec) in enumerate(zip(net.layers, net.spec["layers"])):
        block, args = spec["block"], spec["args"]
        if block == "stem":  # conv, then a conv branch beside a pool, concatenated, then a 1x1 fuse
            conv = add(f"L{index}.conv", layer.conv, list(current), "stem.conv", args)
            branch = add(f"L{index}.branch", layer.branch, [conv], "stem.branch", args)
            pool = add(f"L{index}.pool", layer.pool, [conv], "stem.pool", args)
            current = [add(f"L{index}.fuse", layer.fuse, [branch, pool], "stem.fuse", args, join="cat")]
            like = current[0]
            continue
        if block == "dense":  # the input and its branches' outputs, concatenated
            source = list(current)
            parts = [add(f"L{index}.branch1", layer.branch1, source, "dense.branch1", args)]
            if layer.branch2 is not None:
                parts.append(add(f"L{index}.branch2", layer.branch2, source, "dense.branch2", args))
            if len(source) != 1:  # a sum first, so that the concatenation has one input value
                source = [add(f"L{index}.input", nn.Identity(), source, "sum", args)]
            current = [add(f"L{index}.cat", nn.Identity(), source + parts, "concat", args, join="cat")]
            like = current[0]
            continue
        if block != "cell":
            current = [add(f"L{index}.{block}", layer, list(current), block, args)]
            like = current[0]
            continue
        like = current[0] if current else like
        nodes = [list(current)]
        for target in range(1, 4):
            terms: list[str] = []
            for source, to, op in layer.edges:
                if to != target or op == "none":
                    continue
                if op == "skip_connect":
                    terms.extend(nodes[source])
                    continue
                terms.append(add(f"L{index}.e{source}{to}", layer.ops[f"edge_{source}to{to}"], list(nodes[source]),
                                 op, {"channels": args["channels"]}, node=f"L{index}.n{source}"))
            nodes.append(terms)
        current = nodes[3]
    return operators, current, like


def sum_of(values: dict, terms: list[str], like: str, join: str = "sum") -> torch.Tensor:
    """The sum (``join="cat"``: the concatenation along the channels) of the named values, or zeros shaped like
    ``values[like]``."""
    if not terms:
        return torch.zeros_like(values[like])
    if join == "cat":
        return torch.cat([values[term] for term in terms], 1)
    total = values[terms[0]]
    for term in terms[1:]:
        total = total + values[term]
    return total


@torch.no_grad()
def run_schedule(net: nn.Module, schedule: dict, x: torch.Tensor) -> torch.Tensor:
    """``net(x)`` computed stage by stage as ``schedule`` (``schedule.json``: ``{"stages": [{"ops": [...],
    "strategy": ...}, ...]}``) orders it; on a GPU each operator of a stage runs on a CUDA stream of its own.
    A merged stage runs here as its separate operators (the same outputs; merging is the scheduler's speed-up)."""
    operators, output, output_like = network_operators(net.eval())
    by_name = {op["name"]: op for op in operators}
    scheduled = [name for stage in schedule["stages"] for name in stage["ops"]]
    if sorted(scheduled) != sorted(by_name):
        raise ValueError("the schedule's operators are not this network's: was it made for another architecture?")
    values = {"input": (x - net.mean) / net.std if net.normalizes else x}
    streams = [torch.cuda.Stream(x.device) for _ in range(max(len(s["ops"]) for s in schedule["stages"]))] \
        if x.is_cuda else []
    for stage in schedule["stages"]:
        if not streams or len(stage["ops"]) == 1:
            for name in stage["ops"]:
                op = by_name[name]
                values[name] = op["module"](sum_of(values, op["terms"], op["like"], op["join"]))
            continue
        main = torch.cuda.current_stream(x.device)
        for stream, name in zip(streams, stage["ops"]):
            stream.wait_stream(main)
            with torch.cuda.stream(stream):
                op = by_name[name]
                values[name] = op["module"](sum_of(values, op["terms"], op["like"], op["join"]))
        for stream, name in zip(streams, stage["ops"]):
            main.wait_stream(stream)
            values[name].record_stream(main)
    return sum_of(values, output, output_like)
