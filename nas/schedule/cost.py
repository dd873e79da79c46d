"""What a stage costs: the interface the scheduler asks, a modelled device, and deterministic random costs.

The seed's assumption holds throughout: a stage's cost does not depend on the stage before it, so a schedule's
cost is the sum of its stages'. Measured costs live in ``evaluators.inference.profile`` (torch); here only
what needs no device.
"""
from __future__ import annotations

import abc
import hashlib
from collections.abc import Callable

from nas.schedule.graph import OpGraph
from nas.schedule.plan import CONCURRENT, MERGED


class CostModel(abc.ABC):
    """The cost (e.g. milliseconds) of running a set of operators as one stage."""

    @abc.abstractmethod
    def concurrent(self, graph: OpGraph, ops: tuple[str, ...]) -> float:
        """The cost of ``ops`` launched side by side (one operator: just that operator)."""

    def merged(self, graph: OpGraph, ops: tuple[str, ...]) -> float | None:
        """The cost of ``ops`` merged into one operator; ``None`` when they cannot be merged (the default)."""
        return None

    def stage(self, graph: OpGraph, ops: tuple[str, ...]) -> tuple[float, str]:
        """The cheaper strategy for ``ops`` and its cost (merging only applies to 2+ operators of one group)."""
        best = (float(self.concurrent(graph, ops)), CONCURRENT)
        if mergeable(graph, ops):
            merged = self.merged(graph, ops)
            if merged is not None and merged < best[0]:
                best = (float(merged), MERGED)
        return best


def mergeable(graph: OpGraph, ops: tuple[str, ...]) -> bool:
    """Two or more operators sharing one non-empty merge group (same type, same input)."""
    groups = {graph.by_name[name].merge_group for name in ops}
    return len(ops) > 1 and len(groups) == 1 and "" not in groups


class FunctionCost(CostModel):
    """A user's cost function: ``concurrent(graph, ops)`` and optionally ``merged(graph, ops)`` (``None``
    when not mergeable)."""

    def __init__(self, concurrent: Callable[[OpGraph, tuple[str, ...]], float],
                 merged: Callable[[OpGraph, tuple[str, ...]], float | None] | None = None) -> None:
        self._concurrent, self._merged = concurrent, merged

    def concurrent(self, graph: OpGraph, ops: tuple[str, ...]) -> float:
        return self._concurrent(graph, ops)

    def merged(self, graph: OpGraph, ops: tuple[str, ...]) -> float | None:
        return self._merged(graph, ops) if self._merged is not None else None


class ModelledCost(CostModel):
    """A device as a roofline with a launch cost, for scheduling without measuring.

    A single operator keeps at most ``1 / lanes`` of the device busy (a small kernel fills few of a GPU's
    multiprocessors), so operators side by side overlap until their total work saturates it: a concurrent
    stage takes ``launch * n + max(max(work) / lane_rate, sum(work) / peak)``. A merged stage is one kernel of
    the summed work that may use ``n`` lanes: ``launch + sum(work) * (1 + padding) / min(peak, n * lane_rate)``.
    Work is per image and scales with ``batch``: large batches saturate the device and concurrency stops paying,
    as the seed measured (Fig. 6).

    Args:
        peak: work per unit of time at full occupancy.
        lanes: how many small operators the device runs side by side.
        launch: the fixed cost of one kernel launch.
        batch: images per inference.
        padding: the extra work of a merged kernel (e.g. kernels padded to the largest).
    """

    def __init__(self, peak: float = 1.0, lanes: int = 4, launch: float = 0.0, batch: int = 1,
                 padding: float = 0.0) -> None:
        if peak <= 0 or lanes < 1 or launch < 0 or batch < 1 or padding < 0:
            raise ValueError(f"need peak > 0, lanes >= 1, launch >= 0, batch >= 1, padding >= 0 "
                             f"(peak={peak}, lanes={lanes}, launch={launch}, batch={batch}, padding={padding})")
        self.peak, self.lanes, self.launch, self.batch, self.padding = peak, lanes, launch, batch, padding

    def _works(self, graph: OpGraph, ops: tuple[str, ...]) -> list[float]:
        return [graph.by_name[name].work * self.batch for name in ops]

    def concurrent(self, graph: OpGraph, ops: tuple[str, ...]) -> float:
        works = self._works(graph, ops)
        lane_rate = self.peak / self.lanes
        return self.launch * len(works) + max(max(works) / lane_rate, sum(works) / self.peak)

    def merged(self, graph: OpGraph, ops: tuple[str, ...]) -> float | None:
        works = self._works(graph, ops)
        rate = min(self.peak, len(works) * self.peak / self.lanes)
        return self.launch + sum(works) * (1 + self.padding) / rate


class RandomCost(CostModel):
    """Costs drawn at random per set of operators, fixed by ``seed`` (the same set always costs the same):
    arbitrary stage costs that no scheduler can exploit, for checking schedulers against each other."""

    def __init__(self, seed: int = 0, merge_probability: float = 0.5) -> None:
        self.seed, self.merge_probability = seed, merge_probability

    def _unit(self, salt: str, ops: tuple[str, ...]) -> float:
        text = f"{self.seed}:{salt}:{','.join(sorted(ops))}".encode()
        return int.from_bytes(hashlib.sha256(text).digest()[:8], "big") / 2**64

    def concurrent(self, graph: OpGraph, ops: tuple[str, ...]) -> float:
        # between the largest single cost and the sum, as real overlap is: never free, never worse than serial
        singles = [0.5 + self._unit("one", (name,)) for name in ops]
        return max(singles) + (sum(singles) - max(singles)) * self._unit("overlap", ops)

    def merged(self, graph: OpGraph, ops: tuple[str, ...]) -> float | None:
        if self._unit("mergeable", ops) >= self.merge_probability:
            return None
        return self.concurrent(graph, ops) * (0.5 + self._unit("merged", ops))
