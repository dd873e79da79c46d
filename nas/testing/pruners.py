"""The contract every pruner passes, in the style of :mod:`nas.testing.strategies`.

A test module joins it by subclassing :class:`PrunerContract` and providing a ``make_pruner`` fixture: a
callable ``(seed, direction) -> Pruner`` over ``max_steps`` = :data:`MAX_STEPS` epochs.

Runs are driven by :func:`drive`: :data:`CANDIDATES` synthetic curves (:mod:`nas.pruners.synthetic`) trained
``WORKERS`` at a time, reporting once per epoch in an interleaved order, each stopped as soon as the pruner
says so, and completed at the end of its budget. Imports no pytest, so ``nas`` keeps to stdlib and numpy.
"""
from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Collection
from typing import Any, Callable

import numpy as np

from nas.pruners import Pruner, pruner_from_state
from nas.pruners.synthetic import SyntheticCurve

MAX_STEPS = 12.0
CANDIDATES = 30
WORKERS = 4

MakePruner = Callable[[int, str], Pruner]


def curves(seed: int = 0, count: int = CANDIDATES) -> list[SyntheticCurve]:
    """``count`` synthetic curves over :data:`MAX_STEPS` epochs, fixed by ``seed``."""
    rng = np.random.default_rng(seed)
    return [SyntheticCurve.draw(rng, MAX_STEPS) for _ in range(count)]


@dataclasses.dataclass
class Run:
    """What :func:`drive` saw: the decisions in order, the epochs each candidate trained, the pruner at the end."""

    decisions: list[tuple[int, float, dict[str, Any]]]
    trained: dict[int, float]
    pruner: Pruner


def round_trip(pruner: Pruner) -> Pruner:
    """The pruner rebuilt from a strict JSON round trip of its state (as the database stores it)."""
    return pruner_from_state(json.loads(json.dumps(pruner.state_dict(), allow_nan=False)))


def drive(pruner: Pruner, seed: int = 0, direction: str = "max", resume_at: Collection[int] = (),
          known: bool = False) -> Run:
    """Train :func:`curves` ``WORKERS`` at a time under ``pruner`` (values negated for ``min``: a loss); before
    each round in ``resume_at`` the pruner is replaced by :func:`round_trip` of itself, as after a crash."""
    pool = curves(seed)
    rng = np.random.default_rng(seed + 1)
    sign = 1.0 if direction == "max" else -1.0
    running: dict[int, float] = {}
    waiting = list(range(len(pool)))
    trained: dict[int, float] = {}
    decisions: list[tuple[int, float, dict[str, Any]]] = []
    for round_ in range(10_000):
        if round_ in resume_at:
            pruner = round_trip(pruner)
        while waiting and len(running) < WORKERS:
            cid = waiting.pop(0)
            running[cid] = 0.0
            if known:
                pruner.know(cid, {"params": float(cid % 7)})
        if not running:
            break
        for cid in sorted(running, key=lambda c: (round_ * 7 + c * 3) % 5):
            step = running[cid] + 1.0
            running[cid] = step
            pruner.report(cid, step, sign * pool[cid].observe(step, rng))
            decision = pruner.should_stop(cid)
            decisions.append((cid, step, decision.to_dict()))
            if decision.stop or step >= MAX_STEPS:
                final = sign * pool[cid].observe(step, rng)
                pruner.complete(cid, None if decision.stop else final)
                trained[cid] = step
                del running[cid]
    return Run(decisions, trained, pruner)


class PrunerContract:
    """Checks for any :class:`Pruner`; subclass it in a test module that provides ``make_pruner``."""

    def test_same_seed_same_decisions(self, make_pruner: MakePruner) -> None:
        first, again = drive(make_pruner(3, "max"), 3), drive(make_pruner(3, "max"), 3)
        assert first.decisions == again.decisions and first.trained == again.trained

    def test_state_round_trips_through_strict_json(self, make_pruner: MakePruner) -> None:
        run = drive(make_pruner(1, "max"), 1)
        state = run.pruner.state_dict()
        assert state["name"] == run.pruner.name
        assert round_trip(run.pruner).state_dict() == json.loads(json.dumps(state, allow_nan=False))

    def test_resume_decides_as_the_uninterrupted_run(self, make_pruner: MakePruner) -> None:
        plain = drive(make_pruner(2, "max"), 2)
        for resume_at in ((1,), (3, 7), range(0, 200, 2)):
            resumed = drive(make_pruner(2, "max"), 2, resume_at=resume_at)
            assert resumed.decisions == plain.decisions, resume_at
            assert resumed.pruner.state_dict() == plain.pruner.state_dict(), resume_at

    def test_never_stops_before_min_steps(self, make_pruner: MakePruner) -> None:
        run = drive(make_pruner(4, "max"), 4)
        floor = getattr(run.pruner, "min_steps", 0.0)
        for _, step, decision in run.decisions:
            assert not decision["stop"] or step >= floor, (step, decision)

    def test_minimising_prunes_as_maximising(self, make_pruner: MakePruner) -> None:
        """A loss (the same curves negated, direction ``min``) is pruned exactly as the accuracy."""
        up, down = drive(make_pruner(5, "max"), 5, "max"), drive(make_pruner(5, "min"), 5, "min")
        assert [(c, s, d["stop"]) for c, s, d in up.decisions] == [(c, s, d["stop"]) for c, s, d in down.decisions]
        for (_, _, a), (_, _, b) in zip(up.decisions, down.decisions):
            if a["predicted"] is not None:
                assert math.isclose(a["predicted"], -b["predicted"], rel_tol=1e-6, abs_tol=1e-9)

    def test_degenerate_curves_never_raise(self, make_pruner: MakePruner) -> None:
        pruner = make_pruner(0, "max")
        for cid in range(8):  # completed ones to compare against
            for step in range(1, int(MAX_STEPS) + 1):
                pruner.report(cid, step, 0.5 + 0.03 * cid * (1 - math.exp(-step / 3)))
            pruner.complete(cid, 0.5 + 0.03 * cid)
        shapes: dict[str, Callable[[int], float]] = {
            "constant": lambda s: 0.3, "nan": lambda s: math.nan, "inf": lambda s: math.inf,
            "decreasing": lambda s: 1.0 - 0.08 * s, "diverging": lambda s: 10.0 ** s,
            "jitter": lambda s: 0.2 + 0.5 * (s % 2), "tiny": lambda s: 1e-300 * s,
        }
        for index, (name, shape) in enumerate(shapes.items()):
            cid = 100 + index
            for step in range(1, int(MAX_STEPS) + 1):
                pruner.report(cid, step, shape(step))
                decision = pruner.should_stop(cid)
                assert isinstance(decision.stop, bool), name
                assert decision.predicted is None or math.isfinite(decision.predicted), (name, decision)
        pruner.report(200, 1, 0.4)
        assert not pruner.should_stop(200).stop or pruner.min_steps <= 1  # one point
        assert pruner.should_stop("never reported").stop is False
        json.dumps(pruner.state_dict(), allow_nan=False)

    def test_a_finished_candidate_is_never_stopped(self, make_pruner: MakePruner) -> None:
        run = drive(make_pruner(6, "max"), 6)
        for cid in run.trained:
            run.pruner.report(cid, MAX_STEPS + 1, -1e9)
            assert run.pruner.should_stop(cid).stop is False

    def test_audit_lets_some_finish_and_measures_them(self, make_pruner: MakePruner) -> None:
        plain = drive(make_pruner(7, "max"), 7)
        if not any(d["stop"] for _, _, d in plain.decisions):
            return  # a pruner that stops nothing has nothing to audit
        pruner = type(plain.pruner)(7, "max", MAX_STEPS, **{**plain.pruner.params, "audit": 1.0})
        audited = drive(pruner, 7)
        assert not any(d["stop"] for _, _, d in audited.decisions)
        report = audited.pruner.audit_report()
        assert report["audited"] >= 1 and report["finished"] == report["audited"]
        assert 0 <= report["false_stops"] <= report["finished"] and 0.0 <= report["rate"] <= 1.0
