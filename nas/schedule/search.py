"""The schedulers: seed 002's dynamic program, its baselines (sequential, greedy) and brute force.

The DP (the seed's Algorithm 1) is memoised over the set ``S`` of operators not yet scheduled; its last stage
is a non-empty subset of ``S``'s sinks (operators no other operator of ``S`` reads), at the cheaper of its two
strategies, so ``cost[S] = min over stages T of cost[S - T] + stage(T)``. The sets it reaches are closed
under predecessors, so it is exponential in the graph's width, not its size. Two limits keep wide graphs
tractable, as IOS does: ``max_stage_size`` (the largest stage tried) and ``block_size`` (a graph is first cut
at its chokepoints, operators every other operator depends on or feeds, which loses nothing; a block still
larger than ``block_size`` is cut level by level, which may).
"""
from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Iterator

import numpy as np

from nas.schedule.cost import CostModel
from nas.schedule.graph import OpGraph
from nas.schedule.plan import Schedule, Stage


@dataclasses.dataclass
class SearchStats:
    """What a search cost: DP states, stage costs asked of the cost model, blocks, seconds."""

    states: int = 0
    stages_costed: int = 0
    blocks: int = 0
    largest_block: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, float]:
        return dataclasses.asdict(self)


class _StageCosts:
    """The cost model's answer per stage mask, asked once each."""

    def __init__(self, graph: OpGraph, cost: CostModel, stats: SearchStats) -> None:
        self.graph, self.cost, self.stats = graph, cost, stats
        self.known: dict[int, tuple[float, str]] = {}

    def __call__(self, mask: int) -> tuple[float, str]:
        found = self.known.get(mask)
        if found is None:
            self.stats.stages_costed += 1
            found = self.known[mask] = self.cost.stage(self.graph, self.graph.names(mask))
        return found

    def stage(self, mask: int) -> Stage:
        value, strategy = self(mask)
        return Stage(self.graph.names(mask), strategy, value)


def _check_limit(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"`{name}` must be a positive integer or None (got {value!r})")


def sequential_schedule(graph: OpGraph, cost: CostModel) -> Schedule:
    """One operator per stage, in topological order (how a framework runs a network)."""
    costs = _StageCosts(graph, cost, SearchStats())
    return Schedule(tuple(costs.stage(1 << i) for i in range(len(graph))))


def greedy_schedule(graph: OpGraph, cost: CostModel) -> Schedule:
    """Every operator whose inputs are done goes into the next stage (Tang et al. 2018, the seed's baseline)."""
    costs = _StageCosts(graph, cost, SearchStats())
    done, stages = 0, []
    while done != graph.full:
        ready = sum(1 << i for i in range(len(graph))
                    if not done >> i & 1 and graph.pred_mask[i] & ~done == 0)
        stages.append(costs.stage(ready))
        done |= ready
    return Schedule(tuple(stages))


def _sinks(graph: OpGraph, remaining: int) -> int:
    mask, rest = 0, remaining
    while rest:
        i = (rest & -rest).bit_length() - 1
        rest &= rest - 1
        if graph.succ_mask[i] & remaining == 0:
            mask |= 1 << i
    return mask


def _subsets(mask: int, largest: int | None) -> Iterator[int]:
    """The non-empty subsets of ``mask`` with at most ``largest`` members."""
    sub = mask
    while sub:
        if largest is None or sub.bit_count() <= largest:
            yield sub
        sub = (sub - 1) & mask


def _dp(graph: OpGraph, costs: _StageCosts, max_stage_size: int | None, stats: SearchStats) -> list[int]:
    """The stage masks of an optimal schedule of ``graph`` (the seed's Algorithm 1)."""
    best: dict[int, tuple[float, int]] = {0: (0.0, 0)}

    def solve(remaining: int) -> float:
        found = best.get(remaining)
        if found is not None:
            return found[0]
        stats.states += 1
        choice, value = 0, float("inf")
        for last in _subsets(_sinks(graph, remaining), max_stage_size):
            total = solve(remaining & ~last) + costs(last)[0]
            if total < value:
                choice, value = last, total
        best[remaining] = (value, choice)
        return value

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * len(graph) + 100))
    try:
        solve(graph.full)
    finally:
        sys.setrecursionlimit(limit)
    stages, remaining = [], graph.full
    while remaining:
        last = best[remaining][1]
        stages.append(last)
        remaining &= ~last
    return stages[::-1]


def blocks(graph: OpGraph, block_size: int | None = None) -> list[int]:
    """Masks of consecutive blocks covering ``graph``: each chokepoint alone (an operator that every other one
    depends on or feeds, so it has a stage of its own in any schedule), the operators between two chokepoints
    together, and a block larger than ``block_size`` cut level by level (ordered by :meth:`OpGraph.levels`, so
    that a cut keeps parallel branches side by side instead of splitting one branch from the others)."""
    _check_limit("block_size", block_size)
    n = len(graph)
    ancestors = [graph.ancestors(i) for i in range(n)]
    descendants = [sum(1 << j for j in range(n) if ancestors[j] >> i & 1) for i in range(n)]
    choke = [i for i in range(n) if ancestors[i] | descendants[i] | 1 << i == graph.full]
    segments: dict[int, int] = {}  # the last chokepoint before an operator (-1: none) -> the segment's mask
    for i in range(n):
        if i in choke:
            continue
        before = max((c for c in choke if ancestors[i] >> c & 1), default=-1)
        segments[before] = segments.get(before, 0) | 1 << i
    ordered = [segments[-1]] if -1 in segments else []
    for c in choke:
        ordered.append(1 << c)
        if c in segments:
            ordered.append(segments[c])
    result = []
    level = graph.levels()
    for mask in ordered:
        members = sorted((i for i in range(n) if mask >> i & 1), key=lambda i: (level[i], i))
        step = block_size or len(members)
        result.extend(sum(1 << i for i in members[k:k + step]) for k in range(0, len(members), step))
    return result


def optimal_schedule(graph: OpGraph, cost: CostModel, *, max_stage_size: int | None = None,
                     block_size: int | None = None, stats: SearchStats | None = None) -> Schedule:
    """The cheapest schedule of ``graph`` under ``cost`` (exactly, without limits; see the module's note on
    ``max_stage_size`` and ``block_size``). ``stats``, when given, receives what the search cost."""
    _check_limit("max_stage_size", max_stage_size)
    stats = stats if stats is not None else SearchStats()
    started = time.perf_counter()
    stages: list[Stage] = []
    parts = blocks(graph, block_size)
    stats.blocks += len(parts)
    for part in parts:
        sub = graph.subgraph(part)
        stats.largest_block = max(stats.largest_block, len(sub))
        costs = _StageCosts(sub, cost, stats)
        stages.extend(costs.stage(mask) for mask in _dp(sub, costs, max_stage_size, stats))
    stats.seconds += time.perf_counter() - started
    return Schedule(tuple(stages))


def brute_force_schedule(graph: OpGraph, cost: CostModel, max_ops: int = 10) -> Schedule:
    """The cheapest schedule found by trying every one (forward: each stage a non-empty subset of the ready
    operators, no memo); for checking the DP on graphs of at most ``max_ops`` operators."""
    if len(graph) > max_ops:
        raise ValueError(f"brute force tries every schedule: at most {max_ops} operators (got {len(graph)})")
    costs = _StageCosts(graph, cost, SearchStats())
    best: list = [float("inf"), []]

    def walk(done: int, so_far: float, stages: list[int]) -> None:
        if done == graph.full:
            if so_far < best[0]:
                best[0], best[1] = so_far, list(stages)
            return
        ready = sum(1 << i for i in range(len(graph)) if not done >> i & 1 and graph.pred_mask[i] & ~done == 0)
        for stage in _subsets(ready, None):
            stages.append(stage)
            walk(done | stage, so_far + costs(stage)[0], stages)
            stages.pop()

    walk(0, 0.0, [])
    return Schedule(tuple(costs.stage(mask) for mask in best[1]))


def random_schedule(graph: OpGraph, cost: CostModel, rng: np.random.Generator,
                    max_stage_size: int | None = None) -> Schedule:
    """A valid schedule drawn at random (each stage a random non-empty subset of the ready operators, at most
    ``max_stage_size``), each stage at its cheaper strategy: for checking that the sum of stage costs orders
    schedules as their measured latency does (the seed's section 5.7)."""
    _check_limit("max_stage_size", max_stage_size)
    costs = _StageCosts(graph, cost, SearchStats())
    done, stages = 0, []
    while done != graph.full:
        ready = [i for i in range(len(graph)) if not done >> i & 1 and graph.pred_mask[i] & ~done == 0]
        size = int(rng.integers(1, min(len(ready), max_stage_size or len(ready)) + 1))
        chosen = rng.choice(ready, size=size, replace=False)
        mask = sum(1 << int(i) for i in chosen)
        stages.append(costs.stage(mask))
        done |= mask
    return Schedule(tuple(stages))
