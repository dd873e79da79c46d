"""``curve`` with freeze-thaw pausing (as in Swersky et al. 2014, "Freeze-Thaw Bayesian Optimization"; our own
rules): a candidate unlikely to beat the value to beat, though its honest interval does not stop it yet, is paused
and decided later, when more curves completed and the bar is higher. stdlib + numpy.

When it pauses. At a report where ``curve`` neither stops a candidate nor would (:mod:`nas.pruners.curve`), the same
look-alikes give a looser interval, at level ``1 - 2 pause`` (``pause`` 0.5: their median, the point prediction);
when its upper bound is below the value to beat, the candidate is paused (:attr:`Decision.pause`): its training
state is kept, its slot takes another candidate. A candidate is paused once at most, never before ``min_points``
reports nor before the value to beat exists, and the ``keep`` share of candidates, drawn from the seed and the id
alone (independent of their values), is never paused.

How the paused are decided (:meth:`Pruner.review`, each time a slot frees). Its curve as it was paused, cut at the
epoch it reached, is judged with today's references and value to beat: **stopped** when its stated interval's upper
bound (``curve``'s, at ``1 - 2 threshold``) is below the value to beat; **resumed** from the epoch it reached when
the looser interval no longer says it is unlikely; else it waits. Once every candidate started (``final``), each
review resumes those it does not stop, a slot at a time, the highest upper bound first: a pause alone never loses a
candidate, and a resumed one goes on under ``curve``'s rules (it can still be stopped, never paused again).

What is left of the guarantee. A stop is made on the same conformal bound as ``curve``'s: if a paused candidate
and its look-alikes are exchangeable, ``P(final > high) <= threshold``. Pausing bends exchangeability: the curves
that complete are those not paused (or resumed), so a prefix that looks unlikely completes less often than it
occurs, and its look-alikes are fewer (the interval stays unbounded longer) and drawn from the ones that did
complete: the ``keep`` share and the resumed. The ``keep`` share is a random sample of the candidates whatever
their values, so among the references it keeps every kind of prefix at its rate in the population; the others
are selected by their values, as ``curve``'s own stopped candidates already are. The guarantee is therefore
exact only for references drawn from the ``keep`` share alone; with every completed curve as a reference (what
this does, for enough references early) it is an approximation, measured in ``benchmarks/early_stop.py``. A
paused candidate is judged once per review with a changed reference set and bar: more chances of a false stop than
the one report it was paused at (one of the reasons the true best is stopped more often than under ``curve``).

What it gives (``benchmarks/results/early_stop.md``, held-out seeds 100-119): 1.33-1.54x fewer epochs than
``none`` per mix against ``curve``'s 1.25-1.38x, but the true best stopped in 5-15% of the runs against 0-5%: the
stops it adds are made at the epoch of the pause (4 to 6), from a prefix that says little, with the 19 or 20
look-alikes' highest score as the bound, where the eventual best, above its look-alikes by definition, is missed.
Tried on tuning seeds 0-9 (even, schedules, unstable; a script outside the repository) and left out: a paused
candidate stopped only after 2 reviews in a row below the bar (with new references at each): the same stops (the
bound barely moves as references are added); stopped on a 97.5% or 98.75% bound (39 or 79 look-alikes): the true
best no longer stopped, but nearly all the paused are then resumed and the gain is gone (1.29-1.31x against
``curve``'s 1.25-1.27x). On seeds 0-3 (even, schedules): pausing also candidates whose looser interval is still
unbounded, or resuming the paused only at the end, within 0.03x either way; ``pause`` 0.25 or 0.4 instead of 0.5,
and ``keep`` 0.1 or 0.5 instead of 0.25, 1.31-1.45x, none at 1.5x on either mix.

Not offered to searches (not in :data:`nas.pruners.PRUNERS`): the search loop cannot pause an evaluation yet; the
benchmark drives it as a loop that could.
"""
from __future__ import annotations

import math
from typing import Any, ClassVar

from nas.pruners import conformal
from nas.pruners.base import Decision, unit
from nas.pruners.curve import CurvePruner
from nas.strategies.archive import Param

PAUSE = Param("pause", "float", "Pause a candidate whose interval at level 1 - 2 x pause (0.5: its median) is below "
              "the value to beat, though its stated interval does not stop it yet; decided later. 0: never pause.",
              low=0, high=0.5, label="Pause threshold")
KEEP = Param("keep", "float", "The share of candidates (a seeded draw by id, independent of their values) never "
             "paused, so that completed curves keep coming from every kind of prefix.", low=0, high=1,
             label="Never-paused share")


class FreezeThawPruner(CurvePruner):
    """``curve`` that pauses the unlikely and decides them later (module doc)."""

    name = "curve-pause"
    PARAMS: ClassVar[tuple[Param, ...]] = (*CurvePruner.PARAMS, PAUSE, KEEP)
    DEFAULTS: ClassVar[dict[str, Any]] = {**CurvePruner.DEFAULTS, "pause": 0.5, "keep": 0.25}
    pause: float
    keep: float

    def _looser(self, key: str) -> conformal.Interval | None:
        """``key``'s oriented interval at level ``1 - 2 pause`` from its look-alikes (``None``: no curve)."""
        if self._interval(key) is None:
            return None
        signature, _, mine, scores = self.__dict__["_interval_cache"][key]
        cache = self.__dict__.setdefault("_looser_cache", {})
        if key not in cache or cache[key][0] != signature:
            cache[key] = (signature, conformal.interval(mine, scores, self.pause, self._cap()))
        return cache[key][1]

    def _unlikely(self, key: str, to_beat: float | None) -> bool:
        """Whether ``key``'s looser interval says it is unlikely to beat ``to_beat``."""
        looser = self._looser(key)
        return looser is not None and to_beat is not None and self.pause > 0 and looser.high < to_beat

    def _pause_now(self, key: str, to_beat: float | None) -> bool:
        """Pause ``key``: it was never paused, is not in the ``keep`` share, and is unlikely to beat the bar."""
        return key not in self._resumed and unit(self.seed, "keep", key) >= self.keep and self._unlikely(key, to_beat)

    def review(self, final: bool = False, resume: int = 1) -> list[tuple[str, Decision]]:
        """:meth:`Pruner.review`, the value to beat made once for all the paused (it leaves the paused out, and a
        review changes nothing else it counts)."""
        self._bar = None if self.known_objectives else self._to_beat("")
        try:
            return super().review(final, resume)
        finally:
            self._bar = None

    def _review(self, key: str, final: bool) -> tuple[Decision | None, float]:
        """A paused candidate judged with today's references and value to beat (module doc)."""
        made = self._interval(key)
        to_beat, words = getattr(self, "_bar", None) or self._to_beat(key)
        step = self._paused[key]["step"]
        if made is not None and made.references and to_beat is not None and made.high < to_beat:
            low, high, spread = self._bounds(made)
            return Decision(True, f"paused at epoch {step:g}, then: predicted {self.orient(made.predicted):.4g}, "
                            f"{100 * made.level:.0f}% interval [{self.orient(made.low):.4g}, "
                            f"{self.orient(made.high):.4g}] (from {made.references} look-alikes); P(beats {words}) "
                            f"<= {100 * self.threshold:.3g}% ({words}: {self.orient(to_beat):.4g})",
                            self.orient(made.predicted), spread, low=low, high=high), 0.0
        if self._unlikely(key, to_beat) and not final:
            return None, 0.0
        rank = made.high if made is not None and made.references else math.inf
        return Decision(False, f"resumed from epoch {step:g}"), rank
