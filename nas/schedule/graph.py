"""The operator graph: a DAG of operators, each naming the operators whose outputs it reads."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any


class GraphError(ValueError):
    """A graph that is not a DAG of uniquely named operators; ``field`` names the offending part."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")


@dataclasses.dataclass(frozen=True)
class Op:
    """One operator (a kernel, or a layer run as one).

    Attributes:
        name: unique in its graph.
        inputs: names of the operators whose outputs it reads (its predecessors).
        kind: what it computes, e.g. ``conv_3x3``; the profiler's cache key is built from ``signature``.
        signature: everything that fixes its cost on a device apart from the batch size (kind, shapes, ...):
            operators with equal signatures cost the same, so a measured cost is shared by all of them.
        merge_group: operators with the same non-empty group can be merged into one wider operator (same type,
            same input); ``""`` when it merges with nothing.
        work: its arithmetic (e.g. multiply-accumulates per image), used by :class:`~nas.schedule.ModelledCost`.
    """

    name: str
    inputs: tuple[str, ...] = ()
    kind: str = "op"
    signature: str = ""
    merge_group: str = ""
    work: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "inputs": list(self.inputs)}


class OpGraph:
    """A DAG of :class:`Op`; built only when every input exists, names are unique and there is no cycle.

    Operators are numbered in a topological order (``index``); the scheduler works on bit masks of those numbers.
    """

    def __init__(self, ops: Iterable[Op]) -> None:
        ops = list(ops)
        seen: set[str] = set()
        for position, op in enumerate(ops):
            if not isinstance(op.name, str) or not op.name:
                raise GraphError(f"ops[{position}].name", f"must be a non-empty string (got {op.name!r})")
            if op.name in seen:
                raise GraphError(f"ops[{position}].name", f"{op.name!r} is used twice")
            seen.add(op.name)
        for op in ops:
            for source in op.inputs:
                if source not in seen:
                    raise GraphError(f"{op.name}.inputs", f"{source!r} is not an operator of the graph")
                if source == op.name:
                    raise GraphError(f"{op.name}.inputs", "an operator cannot read its own output (a cycle)")
        self.ops: tuple[Op, ...] = tuple(_topological(ops))
        self.index = {op.name: i for i, op in enumerate(self.ops)}
        self.by_name = {op.name: op for op in self.ops}
        #: Bit masks of each operator's predecessors and successors, by index.
        self.pred_mask = [sum(1 << self.index[s] for s in set(op.inputs)) for op in self.ops]
        self.succ_mask = [0] * len(self.ops)
        for i, op in enumerate(self.ops):
            for source in set(op.inputs):
                self.succ_mask[self.index[source]] |= 1 << i

    def __len__(self) -> int:
        return len(self.ops)

    @property
    def full(self) -> int:
        """The mask of every operator."""
        return (1 << len(self.ops)) - 1

    def names(self, mask: int) -> tuple[str, ...]:
        """The operators of ``mask``, in topological order."""
        return tuple(op.name for i, op in enumerate(self.ops) if mask >> i & 1)

    def mask(self, names: Iterable[str]) -> int:
        return sum(1 << self.index[name] for name in set(names))

    def ancestors(self, i: int) -> int:
        """The mask of every operator ``i`` depends on, directly or not."""
        found, frontier = 0, self.pred_mask[i]
        while frontier:
            j = (frontier & -frontier).bit_length() - 1
            frontier &= frontier - 1
            if not found >> j & 1:
                found |= 1 << j
                frontier |= self.pred_mask[j] & ~found
        return found

    def subgraph(self, mask: int) -> OpGraph:
        """The operators of ``mask``, keeping only the edges between them."""
        kept = set(self.names(mask))
        return OpGraph(dataclasses.replace(op, inputs=tuple(s for s in op.inputs if s in kept))
                       for op in self.ops if op.name in kept)

    def levels(self) -> list[int]:
        """Each operator's level: the length of the longest path of operators leading to it (0: reads none)."""
        level: list[int] = []
        for i in range(len(self.ops)):
            preds = [j for j in range(len(self.ops)) if self.pred_mask[i] >> j & 1]
            level.append(1 + max((level[j] for j in preds), default=-1))
        return level

    def width(self) -> int:
        """The most operators on one level (see :meth:`levels`): a quick measure of how wide the DP's frontier
        gets."""
        level = self.levels()
        return max((level.count(v) for v in set(level)), default=0)

    def to_dict(self) -> dict[str, Any]:
        return {"ops": [op.to_dict() for op in self.ops]}

    @classmethod
    def from_dict(cls, data: Any) -> OpGraph:
        """Parse :meth:`to_dict`'s JSON; :class:`GraphError` names the bad field."""
        if not isinstance(data, dict) or not isinstance(data.get("ops"), list):
            raise GraphError("ops", "a graph is {'ops': [{'name': ..., 'inputs': [...]}, ...]}")
        ops = []
        fields = {f.name for f in dataclasses.fields(Op)}
        for position, item in enumerate(data["ops"]):
            if not isinstance(item, dict) or not set(item) <= fields or "name" not in item:
                raise GraphError(f"ops[{position}]", f"must be an object with a name and fields among {sorted(fields)}")
            inputs = item.get("inputs", [])
            if not isinstance(inputs, list) or not all(isinstance(s, str) for s in inputs):
                raise GraphError(f"ops[{position}].inputs", "must be a list of operator names")
            ops.append(Op(**{**item, "inputs": tuple(inputs)}))
        return cls(ops)


def _topological(ops: list[Op]) -> list[Op]:
    """``ops`` in a topological order (stable: ties keep their given order); :class:`GraphError` on a cycle."""
    waiting = {op.name: len(set(op.inputs)) for op in ops}
    readers: dict[str, list[str]] = {op.name: [] for op in ops}
    for op in ops:
        for source in set(op.inputs):
            readers[source].append(op.name)
    position = {op.name: i for i, op in enumerate(ops)}
    ready = sorted((op.name for op in ops if waiting[op.name] == 0), key=position.__getitem__)
    order: list[str] = []
    while ready:
        name = ready.pop(0)
        order.append(name)
        for reader in readers[name]:
            waiting[reader] -= 1
            if waiting[reader] == 0:
                ready.append(reader)
                ready.sort(key=position.__getitem__)
    if len(order) < len(ops):
        stuck = sorted(name for name, count in waiting.items() if count > 0)
        raise GraphError("inputs", f"the graph has a cycle through {', '.join(stuck[:8])}")
    by_name = {op.name: op for op in ops}
    return [by_name[name] for name in order]
