"""The simulated search behind ``benchmarks/early_stop.py``: pools of shaped learning curves with known finals, and
their evaluation on asynchronous slots under one pruner, as the control loop drives it (report, should_stop,
complete; for a pruner that pauses, review of the paused as slots free)."""
from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from nas.pruners import Pruner, unoffered_pruner
from nas.pruners.synthetic import SHAPES, ShapedCurve

#: Mixes: the share of each shape (in the order of SHAPES) and the shapes whose candidates are drawn best.
MIXES: dict[str, tuple[tuple[float, ...], tuple[str, ...]]] = {
    "even": ((1, 1, 1, 1, 1, 1), ()),
    "saturating": ((0.35, 0.35, 0.06, 0.08, 0.08, 0.08), ()),
    "schedules": ((0.1, 0.1, 0.3, 0.3, 0.1, 0.1), ()),
    "unstable": ((0.1, 0.1, 0.1, 0.1, 0.3, 0.3), ()),
    "late risers best": ((0.2, 0.2, 0.2, 0.15, 0.1, 0.15), ("late",)),
}
TOP = 5
#: The candidates started before 19 can have completed on 8 slots (19 + 8): they train in full under `curve`.
FIRST = 27


class Pool:
    """Candidates: each one's observed value per report step, its true final, its cost per report, its shape."""

    def __init__(self, steps: list[float], values: list[list[float]], finals: list[float], costs: list[float],
                 shapes: list[str] | None = None) -> None:
        self.steps, self.values, self.finals, self.costs = steps, values, finals, costs
        self.shapes = shapes or ["digits"] * len(finals)


def mixed_pool(seed: int, mix: str, candidates: int, epochs: int) -> Pool:
    """``candidates`` curves of the mix's shapes, fixed by ``seed``; in a mix with best shapes, those are drawn
    with a quality in [0.85, 1) and the others in [0, 0.9)."""
    shares, best = MIXES[mix]
    rng = np.random.default_rng([seed, list(MIXES).index(mix)])
    p = np.array(shares, float) / sum(shares)
    shapes = [SHAPES[i] for i in rng.choice(len(SHAPES), size=candidates, p=p)]
    curves = [ShapedCurve.draw(rng, s, float(epochs), quality=(float(rng.uniform(0.85, 1.0)) if s in best else
                                                                float(rng.uniform(0.0, 0.9))) if best else None)
              for s in shapes]
    steps = [float(e) for e in range(1, epochs + 1)]
    values = [[c.observe(s, rng) for s in steps] for c in curves]
    return Pool(steps, values, [c.final for c in curves], list(rng.lognormal(0.0, 0.3, candidates)), shapes)


def replay(pool: Pool, name: str, params: dict[str, Any], seed: int, workers: int,
           make: Callable[[int, float], Pruner] | None = None) -> dict[str, Any]:
    """Evaluate the pool's candidates in order on ``workers`` slots under one pruner. A candidate the pruner
    pauses frees its slot (its epochs so far count once); each time a slot frees, the paused ones are reviewed
    (stopped, resumed, or left paused), a resumed one takes the slot before a new one and goes on from its epoch;
    once every candidate started, the review resumes the paused ones a slot at a time. ``make(seed, max_steps)``,
    when given, builds the pruner instead of ``name`` and ``params`` (the benchmark-only reference pruners of
    ``benchmarks/early_stop_frontier.py``)."""
    max_steps = pool.steps[-1]
    pruner = (make(seed, max_steps) if make is not None
              else unoffered_pruner(name.split(" ")[0], seed, "max", max_steps, **params))
    events: list[tuple[float, int, int]] = []
    started = 0  # candidates started, in the pool's order
    trained: dict[int, float] = {}
    stopped: set[int] = set()
    paused_at: dict[int, int] = {}  # candidates paused (ever) -> the index of their last report before the pause
    resumable: list[int] = []
    held: dict[str, list[int]] = {}  # shape -> [intervals that held the observed final, intervals]
    bounded: set[int] = set()  # candidates given a bounded interval at some report
    spent, reports, reviewed, reviews, slowest = 0.0, 0, 0.0, 0, 0.0
    stopped_paused: set[int] = set()  # stopped by a review, while paused

    def tally(cid: int, decision: Any) -> None:
        if decision.low is not None and decision.high is not None:
            counts = held.setdefault(pool.shapes[cid], [0, 0])
            counts[0] += decision.low <= pool.values[cid][-1] <= decision.high
            counts[1] += 1
            bounded.add(cid)

    def fill(now: float) -> None:
        """A slot is free: review the paused, then resume one or start a new one."""
        nonlocal started, reviewed, reviews, slowest
        if paused_at:
            mark = time.perf_counter()
            decided = pruner.review(final=started == len(pool.finals), resume=1)
            took = time.perf_counter() - mark
            reviewed, reviews, slowest = reviewed + took, reviews + 1, max(slowest, took)
            for key, decision in decided:
                cid = int(key)
                if decision.stop:
                    tally(cid, decision)
                    stopped.add(cid)
                    stopped_paused.add(cid)
                    pruner.complete(cid, None)
                else:
                    resumable.append(cid)
        if resumable:
            cid = resumable.pop(0)
            index = paused_at[cid] + 1
            heapq.heappush(events, (now + pool.costs[cid] * (pool.steps[index] - pool.steps[index - 1]), cid, index))
        elif started < len(pool.finals):
            heapq.heappush(events, (now + pool.costs[started] * pool.steps[0], started, 0))
            started += 1

    for _ in range(workers):
        fill(0.0)
    while events:
        now, cid, index = heapq.heappop(events)
        mark = time.perf_counter()
        pruner.report(cid, pool.steps[index], pool.values[cid][index])
        decision = pruner.should_stop(cid)
        spent += time.perf_counter() - mark
        reports += 1
        tally(cid, decision)
        trained[cid] = pool.steps[index]
        last = index == len(pool.steps) - 1
        if decision.pause:
            paused_at[cid] = index
            fill(now)
        elif decision.stop or last:
            pruner.complete(cid, None if decision.stop else pool.values[cid][index])
            if decision.stop:
                stopped.add(cid)
            fill(now)
        else:
            heapq.heappush(events, (now + pool.costs[cid] * (pool.steps[index + 1] - pool.steps[index]), cid, index + 1))
    assert not pruner.paused() and started == len(pool.finals)
    full = [c for c in trained if c not in stopped]
    chosen = max(full, key=lambda c: pool.values[c][-1])  # what the search reports as its best
    top = sorted(range(len(pool.finals)), key=lambda c: -pool.finals[c])[:TOP]
    return {"epochs": sum(trained.values()), "best": pool.finals[chosen], "best_stopped": top[0] in stopped,
            "top_stopped": bool(stopped & set(top)), "cost_us": 1e6 * spent / max(reports, 1), "held": held,
            "review_us": 1e6 * reviewed / reviews if reviews else None, "review_max_us": 1e6 * slowest,
            "audit": pruner.audit_report(),
            "first_epochs": sum(e for c, e in trained.items() if c not in bounded and c < FIRST),
            "where": {"never bounded": sum(e for c, e in trained.items() if c not in bounded),
                      "bounded, went on": sum(e for c, e in trained.items() if c in bounded and c not in stopped),
                      "stopped": sum(trained[c] for c in stopped), "stops": len(stopped),
                      "paused": len(paused_at), "stopped while paused": len(stopped_paused),
                      "resumed, then stopped": len(stopped & set(paused_at)) - len(stopped_paused)}}


