"""Running a ``Net`` stage by stage from a ``schedule.json``: the operators of a network and their inputs, and
:func:`run_schedule`.

This module imports nothing but torch: ``evaluators.export`` copies it, verbatim, into the standalone
``model.py`` (after ``evaluators/blocks.py``), so an exported network runs with its schedule without this project.
``evaluators.schedule.program`` builds the scheduler's graph from the same :func:`network_operators`, so the
operator names of a schedule and of the network always agree: ``L<layer>.<block>`` for a layer run whole, and
``L<layer>.e<source><target>`` for an edge of a cell (``skip_connect`` and ``none`` edges are not operators: they
only add to, or leave out of, a node's sum).
"""
from __future__ import annotations

import torch
from torch import nn


def network_operators(net: nn.Module) -> tuple[list[dict], list[str], str]:
    """The operators of ``net`` in its own order, each ``{"name", "module", "terms", "like", "kind", "node",
    "args"}``: its input is the sum of the values named in ``terms`` (``"input"`` is the network's input), or
    zeros shaped like ``like`` when ``terms`` is empty; then the output's terms and ``like``."""
    operators: list[dict] = []
    current, like = ["input"], "input"
    for index, (layer, spec) in enumerate(zip(net.layers, net.spec["layers"])):
        if spec["block"] != "cell":
            name = f"L{index}.{spec['block']}"
            operators.append({"name": name, "module": layer, "terms": list(current), "like": like,
                              "kind": spec["block"], "node": "", "args": spec["args"]})
            current, like = [name], name
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
                name = f"L{index}.e{source}{to}"
                operators.append({"name": name, "module": layer.ops[f"edge_{source}to{to}"],
                                  "terms": list(nodes[source]), "like": like, "kind": op,
                                  "node": f"L{index}.n{source}", "args": {"channels": spec["args"]["channels"]}})
                terms.append(name)
            nodes.append(terms)
        current = nodes[3]
    return operators, current, like


def sum_of(values: dict, terms: list[str], like: str) -> torch.Tensor:
    """The sum of the named values, or zeros shaped like ``values[like]``."""
    if not terms:
        return torch.zeros_like(values[like])
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
                values[name] = op["module"](sum_of(values, op["terms"], op["like"]))
            continue
        main = torch.cuda.current_stream(x.device)
        for stream, name in zip(streams, stage["ops"]):
            stream.wait_stream(main)
            with torch.cuda.stream(stream):
                op = by_name[name]
                values[name] = op["module"](sum_of(values, op["terms"], op["like"]))
        for stream, name in zip(streams, stage["ops"]):
            main.wait_stream(stream)
            values[name].record_stream(main)
    return sum_of(values, output, output_like)
