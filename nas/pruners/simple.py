"""The pruners that compare values at equal steps: ``none``, ``median`` (NNI's Medianstop, Optuna's
MedianPruner) and ``asha`` (asynchronous successive halving, Li et al. 2020; Ray Tune's ASHA)."""
from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from nas.pruners.base import AUDIT, GO_ON, MIN_STEPS, Decision, Pruner
from nas.strategies.archive import Param


class NoPruner(Pruner):
    """Never stops anything: every candidate trains its full budget."""

    name = "none"
    PARAMS: ClassVar[tuple[Param, ...]] = ()
    DEFAULTS: ClassVar[dict[str, Any]] = {}
    min_steps = 0.0
    audit = 0.0

    def _decide(self, key: str, curve: list[list[float]]) -> Decision:
        return GO_ON


MIN_COMPLETED = Param("min_completed", "int", "Completed candidates needed before it stops any.", low=1,
                      high=10_000, label="Completed before pruning")


class MedianPruner(Pruner):
    """Stops a candidate whose best value so far, at its latest step t, is worse than the median of the best
    values the completed candidates had reached by t (once ``min_completed`` completed)."""

    name = "median"
    PARAMS: ClassVar[tuple[Param, ...]] = (MIN_STEPS, MIN_COMPLETED, AUDIT)
    DEFAULTS: ClassVar[dict[str, Any]] = {"min_steps": 1.0, "min_completed": 5, "audit": 0.0}
    min_completed: int

    def _decide(self, key: str, curve: list[list[float]]) -> Decision:
        step = curve[-1][0]
        others = [self._value_at(k, step) for k in self._completed()]
        others = [v for v in others if v is not None]
        if len(others) < self.min_completed:
            return GO_ON
        median = float(np.median(others))
        best = max(v for _, v in curve)
        if best >= median:
            return GO_ON
        self._last_median = median
        return Decision(True, f"best {self.orient(best):.4g} by epoch {step:g} is worse than the median "
                              f"{self.orient(median):.4g} of {len(others)} completed candidates at that epoch")

    def _threshold(self) -> float | None:
        return getattr(self, "_last_median", None)


ETA = Param("eta", "int", "Reduction factor: one in eta candidates goes on past each rung.", low=2, high=100,
            label="Reduction factor")


class ASHAPruner(Pruner):
    """Asynchronous successive halving: rungs at ``min_steps * eta**k`` epochs (below ``max_steps``); a
    candidate reaching a rung goes on only if its best value so far is among the top ``1/eta`` of the values
    recorded at that rung so far (its own included). With fewer than ``eta`` values at a rung it goes on:
    asynchronous, no candidate waits for others."""

    name = "asha"
    PARAMS: ClassVar[tuple[Param, ...]] = (MIN_STEPS, ETA, AUDIT)
    DEFAULTS: ClassVar[dict[str, Any]] = {"min_steps": 1.0, "eta": 3, "audit": 0.0}
    eta: int

    def rungs(self) -> list[float]:
        """The rungs' steps, smallest first."""
        start = max(self.min_steps, 1e-9)
        count = max(0, math.ceil(math.log(self.max_steps / start, self.eta) - 1e-9)) if self.max_steps > start else 0
        return [start * self.eta**k for k in range(count)]

    def _decide(self, key: str, curve: list[list[float]]) -> Decision:
        step = curve[-1][0]
        reached = [r for r in self.rungs() if r <= step + 1e-9]
        if not reached:
            return GO_ON
        rung = reached[-1]
        if len(curve) > 1 and curve[-2][0] >= rung - 1e-9:
            return GO_ON  # judged at this rung already: a promotion is decided once
        # The values at the rung of every candidate that reached it, this one included, in the order of ids.
        values = {k: self._value_at(k, rung) for k, c in self._curves.items() if c and c[-1][0] >= rung - 1e-9}
        mine = values[key]
        ranked = sorted((v for v in values.values() if v is not None), reverse=True)
        if len(ranked) < self.eta or mine is None:
            return GO_ON
        keep = max(1, len(ranked) // self.eta)
        cut = ranked[keep - 1]
        if mine >= cut:
            return GO_ON
        self._last_cut = cut
        return Decision(True, f"best {self.orient(mine):.4g} at rung {rung:g} is outside the top 1/{self.eta} "
                              f"({keep} of {len(ranked)}; the cut is {self.orient(cut):.4g})")

    def _threshold(self) -> float | None:
        return getattr(self, "_last_cut", None)
