"""A readable diagram of an architecture: the blocks from input to output, as data a template draws as boxes.
``evaluators.model_source.describe`` (no torch) gives every layer with its output shape, parameters and MACs; without
it, the blocks are read from the genome."""
from __future__ import annotations

from typing import Any


def _chain(space: dict[str, Any], genome: dict[str, Any]) -> list[dict[str, str]]:
    modules = space.get("modules", 3)
    layers = [{"label": f"conv {layer['kernel']}x{layer['kernel']}", "detail": f"{layer['filters']} filters"}
              for layer in genome.get("layers", [])]
    return [{"label": f"module x{modules}", "detail": "each module repeats the layers below", "kind": "group"},
            *layers]


def _pelee(space: dict[str, Any], genome: dict[str, Any]) -> list[dict[str, str]]:
    return [{"label": f"stage {i + 1}: {ways}-way dense block",
             "detail": f"{layers} layers, growth {growth}"}
            for i, (ways, layers, growth) in enumerate(genome.get("stages", []))]


def _cell(space: dict[str, Any], genome: dict[str, Any]) -> list[dict[str, str]]:
    cells = f"{space.get('stages', 3)} stages x {space.get('cells_per_stage', 2)} cells, {space.get('channels', 16)} channels"
    edges = [{"label": genome_edge(edge), "detail": op} for edge, op in (genome.get("edges") or {}).items()]
    return [{"label": "cell", "detail": cells, "kind": "group"}, *edges]


def genome_edge(edge: str) -> str:
    target, _, source = edge.partition("<-")
    return f"node {source} -> node {target}"


BUILDERS = {"chain": _chain, "pelee": _pelee, "cell": _cell}


def _shape(shape: list[int]) -> str:
    return "x".join(str(n) for n in shape)


def described(space: dict[str, Any], genome: dict[str, Any], dataset: str) -> list[dict[str, str]] | None:
    """The blocks from ``evaluators.model_source.describe``; ``None`` when it is not installed or cannot describe it."""
    try:
        from evaluators.model_source import describe
    except ImportError:
        return None
    try:
        summary = describe(genome, space, dataset)
    except Exception:  # an old genome the builders no longer read: fall back to the genome's own blocks
        return None
    layers = [{"label": layer["label"],
               "detail": f"out {_shape(layer['output'])} · {layer['params']:,} params · {layer['macs']:,} MACs"}
              for layer in summary.get("layers", [])]
    return [{"label": "input", "detail": _shape(summary["input"]), "kind": "io"}, *layers,
            {"label": "output", "detail": f"{_shape(summary['output'])} · total {summary['params']:,} params, "
                                          f"{summary['macs']:,} MACs", "kind": "io"}]


def blocks(space: dict[str, Any], genome: dict[str, Any], dataset: str = "digits") -> list[dict[str, str]]:
    """Input, the blocks in order, then the classifier; unknown spaces show their genes."""
    found = described(space, genome, dataset)
    if found is not None:
        return found
    builder = BUILDERS.get(space.get("name"))
    try:
        middle = builder(space, genome) if builder else [{"label": k, "detail": str(v)} for k, v in genome.items()]
    except (KeyError, TypeError, ValueError):
        middle = [{"label": "genome", "detail": str(genome)[:200]}]
    return [{"label": "input", "detail": "", "kind": "io"}, *middle,
            {"label": "global pool + linear", "detail": "classifier", "kind": "io"}]
