"""``curve``: stops a candidate only when its final value, predicted with an honest interval, cannot reach the value
to beat. stdlib + numpy.

How it predicts: :mod:`nas.pruners.conformal` (split conformal prediction over the completed curves whose prefix,
cut at the same epoch, looks like this one; what it guarantees is said there).

When it stops. Once a candidate has trained ``min_steps`` epochs and has ``min_points`` reports, its interval at
level ``1 - 2 threshold`` (90% at the default 0.05) is made from its ``neighbours`` look-alikes (at least as many
as bound the interval: 19 at 0.05), and it is stopped when the interval's upper bound is below the value to beat
at :data:`CONFIRM` (2) reports in a row or more, spanning at least ``confirm_span`` of the budget (so that
reporting more often does not stop more): ``P(final > upper bound) <= threshold`` at each, so ``threshold`` keeps its
meaning, a bound on the probability of stopping one that would have beaten the bar (on average over the
candidates, under the look-alikes' exchangeability; the second report only makes a stop rarer). Until enough
comparable curves completed, the upper bound is infinite and nothing is stopped; at the budget's last report there
is nothing left to save, so nothing is stopped either. The value to beat is the ``k``-th best (or, once that ranks
lower, the best ``top_share`` of the candidates seen: :meth:`CurvePruner._rank`) among the completed
candidates' settled finals (the mean of their last :data:`SETTLE_POINTS` reports: the ``k``-th best of noisy
finals is biased upwards) and the running candidates' lower bounds as stated at their latest report (each above
their final with probability at most ``threshold``; kept in the state, so a resumed search uses the same, and not
recomputed for every running candidate after each completion, which cost 7-12 ms a report with 200 references):
the population's pessimistic ``k``-th best.

What it does not promise. The guarantee is marginal, per report: a candidate judged at 15 reports has 15 chances
to be stopped by mistake, and the eventual best of a search is, almost by definition, better than its
look-alikes, which is where a marginal bound is weakest. ``benchmarks/early_stop.py`` measures how often it stops
the true best on mixes of curve shapes (``benchmarks/results/early_stop.md``).

Multi-objective (nsga2): with ``known_objectives`` (objectives known before training, such as ``params``;
given per candidate by :meth:`CurvePruner.know`), the value to beat is the best final among the completed
candidates at least as good in every known objective: a candidate whose upper bound is below it is dominated,
with the configured confidence.

Its record. Every interval it states is kept per candidate and report (``intervals`` in the state); once a
candidate completes (trained to the end, or let finish by the audit), whether each of its intervals held its final
is counted: :meth:`CurvePruner.audit_report`'s ``coverage``, the observed coverage of the stated level, shown on
the search's page. Everything else (cuts, scores, intervals) is derived from the curves and cached, never saved:
a restored pruner computes the same and decides exactly as the uninterrupted one.
"""
from __future__ import annotations

import bisect
import dataclasses
import math
from statistics import NormalDist
from typing import Any, ClassVar

import numpy as np

from nas.pruners import conformal
from nas.pruners.base import AUDIT, GO_ON, MIN_STEPS, Decision, Pruner
from nas.strategies.archive import Param
from nas.strategies.objectives import check_objectives

#: A completed candidate counts in the value to beat at the mean of its latest this many reports.
SETTLE_POINTS = 3
#: A candidate is stopped only when its upper bound was below the value to beat at this many reports in a row.
#: One chance in ``threshold`` per report compounds over the 15 or so reports at which a candidate is judged; the
#: eventual best, better than its look-alikes by definition, is where a marginal bound misses most, and a miss
#: caused by one noisy report or a plateau's first epoch rarely repeats. On the benchmark's tuning seeds 0-9
#: (100 candidates of 20 epochs): the true best stopped in 0/0/10% of runs (even/saturating/unstable) against
#: 0/10/20% with 1, a top-5 one in 20/70/10% against 40/80/30%, for 1.18-1.30x fewer epochs against 1.24-1.37x.
CONFIRM = 2

TOP_K = Param("k", "int", "Stop a candidate unlikely to beat the k-th best completed one.", low=1, high=10_000,
              label="Compare with the k-th best")
TOP_SHARE = Param("top_share", "float", "Or with the best this share of the candidates seen, whichever ranks lower: "
                  "k grows with the search (0.05: the 10th best of 200), so the eventual best keeps its margin over "
                  "the value to beat however many candidates there are. 0: the k-th best always.", low=0, high=1,
                  label="Or the top share")
THRESHOLD = Param("threshold", "float", "Stop when the chance that its final beats the value to beat is at most "
                  "this (its stated interval is at level 1 - 2 x threshold).", low=0, high=0.5,
                  label="Probability threshold")
CONFIRM_SPAN = Param("confirm_span", "float", "A stop needs the upper bound below the value to beat at 2 reports in "
                     "a row or more, spanning at least this share of the budget (0.05: 1 epoch of 20, 2 of 30 or "
                     "40), so that reporting more often does not stop more.", low=0, high=1,
                     label="Confirm over (share of the budget)")
MIN_POINTS = Param("min_points", "int", "Reports needed before a curve is judged.", low=1, high=1_000,
                   label="Minimum reports")
NEIGHBOURS = Param("neighbours", "int", "How many completed curves with the nearest prefixes calibrate an "
                   "interval (at least (1 - threshold) / threshold are used).", low=1, high=100_000,
                   label="Look-alike curves")
UPPER = Param("upper", "float", "The best value the watched metric can take (1 for an accuracy): residuals are "
              "shares of the headroom to it, bounds are capped there. None: unbounded.", low=-1e12, high=1e12,
              optional=True, label="Best possible value")
KNOWN = Param("known_objectives", "objectives", 'Multi-objective: the objectives known before training, as '
              '[name, "max" | "min"] pairs (the search fills them from nsga2\'s).', optional=True,
              label="Known objectives")
#: The rules a state saved without them decided by: a search resumed after an upgrade goes on deciding as it did.
SAVED_BEFORE = {"top_share": 0.0, "confirm_span": 0.0}


class CurvePruner(Pruner):
    """Stops a candidate whose conformal interval's upper bound is below the ``k``-th best (module doc)."""

    name = "curve"
    PARAMS: ClassVar[tuple[Param, ...]] = (MIN_STEPS, TOP_K, TOP_SHARE, THRESHOLD, CONFIRM_SPAN, MIN_POINTS,
                                           NEIGHBOURS, AUDIT, UPPER, KNOWN)
    DEFAULTS: ClassVar[dict[str, Any]] = {"min_steps": 1.0, "k": 5, "top_share": 0.05, "threshold": 0.05,
                                          "confirm_span": 0.05, "min_points": 4,
                                          "neighbours": 20, "audit": 0.0, "upper": None, "known_objectives": None}
    k: int
    top_share: float
    threshold: float
    confirm_span: float
    min_points: int
    neighbours: int
    known_objectives: list[list[str]] | None
    upper: float | None

    def __init__(self, seed: int = 0, direction: str = "max", max_steps: float = 1.0, **params: Any) -> None:
        super().__init__(seed, direction, max_steps, **params)
        #: ids -> the intervals stated, [[step, oriented low | None, oriented high | None], ...] (None: unbounded)
        self._intervals: dict[str, list[list[float | None]]] = {}
        #: ids -> [the step of their latest decision, how many reports in a row their upper bound was below the bar]
        self._below: dict[str, list[float]] = {}

    @classmethod
    def _check_extra(cls, name: str, value: Any) -> Any:
        if name == "known_objectives" and value is not None:
            return check_objectives(value) if value else []
        return value

    def _cap(self) -> float | None:
        """``upper`` in the oriented (larger is better) units; only a bound on the better side caps."""
        return None if self.upper is None else self.orient(self.upper)

    def know(self, id: Any, objectives: dict[str, float]) -> None:
        """The objectives of ``id`` known before training (multi-objective), oriented as configured."""
        if not self.known_objectives or str(id) in self._known:
            return
        row = []
        for name, direction in self.known_objectives:
            value = objectives.get(name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                return
            row.append(float(value) if direction == "max" else -float(value))
        self._known[str(id)] = row

    def prediction(self, id: Any) -> conformal.Interval | None:
        """The interval of ``id``'s final value as its curve is now, in the user's units (``None``: no curve)."""
        made = self._interval(str(id))
        if made is None:
            return None
        low, high = sorted((self.orient(made.low), self.orient(made.high)))
        return conformal.Interval(self.orient(made.predicted), low, high, made.level, made.references)

    # --- the references: completed curves cut where a candidate is now (derived, cached) ----------------------

    def _full_curve(self, key: str) -> list[list[float]]:
        """A completed candidate's curve ending with its final at the end of the budget (the engine's last report
        is the result, not a progress message: the final completes the curve)."""
        curve, final = self._curves.get(key, []), self._finals.get(key)
        if final is not None and (not curve or curve[-1][0] < self.max_steps - 1e-9):
            return [*curve, [self.max_steps, final]]
        return curve

    def _reference_curves(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The curves of the candidates that completed with a final value (trained their full budget), in the
        order of ids, as :func:`conformal.pad` arrays, and their finals; kept per number of completed candidates,
        the new ones inserted in place (finals are only ever added, so the arrays are those a restored pruner
        builds at once)."""
        count, keys, steps, values, finals = self.__dict__.get("_padded") or (-1, [], *conformal.pad([]), np.zeros(0))
        if count != len(self._finals):
            known = set(keys)
            new = [k for k in sorted(self._finals) if k not in known and self._finals[k] is not None]
            if len(new) > 8:  # many at once (a restored pruner): built whole
                keys = sorted([*keys, *new])
                steps, values = conformal.pad([self._full_curve(k) for k in keys])
                finals, new = np.array([self._finals[k] for k in keys]), []
            for key in new:
                curve = self._full_curve(key)
                row_steps, row_values = conformal.pad([curve])
                width = max(steps.shape[1], row_steps.shape[1])
                steps, row_steps = (np.pad(a, ((0, 0), (0, width - a.shape[1])), constant_values=np.inf)
                                    for a in (steps, row_steps))
                values, row_values = (np.pad(a, ((0, 0), (0, width - a.shape[1]))) for a in (values, row_values))
                at = bisect.bisect(keys, key)
                keys.insert(at, key)
                steps, values = np.insert(steps, at, row_steps[0], axis=0), np.insert(values, at, row_values[0], axis=0)
                finals = np.insert(finals, at, self._finals[key])
            self._padded = (len(self._finals), keys, steps, values, finals)
        return steps, values, finals

    def _references(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """The prefixes (rows) and scores of the reference curves cut at ``t``; cached per ``t`` and number of
        completed candidates."""
        cache = self.__dict__.setdefault("_reference_cache", {})
        self._reference_curves()
        signature = (t, len(self._padded[1]))  # the references are only ever added
        if signature not in cache:
            steps, values, finals = self._reference_curves()
            prefixes, levels, scales, seen = conformal.cut_many(steps, values, t, self._cap())
            if len(cache) > 256:
                cache.clear()
            cache[signature] = (prefixes[seen], ((finals - levels) / scales)[seen])
        return cache[signature]

    def _interval(self, key: str) -> conformal.Interval | None:
        """``key``'s oriented interval at level ``1 - 2 threshold``, cached per curve length and references."""
        curve = self._curves.get(key, [])
        if not curve:
            return None
        self._reference_curves()
        signature = (len(curve), len(self._padded[1]))
        cache = self.__dict__.setdefault("_interval_cache", {})
        if key not in cache or cache[key][0] != signature:
            t = curve[-1][0]
            if key in cache and cache[key][0][0] == len(curve):  # only the references changed (a paused curve)
                mine = cache[key][2]
            else:
                mine = conformal.cut([s for s, _ in curve], [v for _, v in curve], t, self._cap())
            prefixes, scores = self._references(t)
            if mine is None:
                return None
            count = int(max(self.neighbours, min(conformal.references_needed(self.threshold), 10**9)))
            close = conformal.look_alikes(mine.prefix, prefixes, count, conformal.RADIUS)
            made = conformal.interval(mine, scores[close], self.threshold, self._cap())
            cache[key] = (signature, made, mine, scores[close])
        return cache[key][1]

    # --- deciding ---------------------------------------------------------------------------------------------

    def _to_beat(self, key: str) -> tuple[float | None, str]:
        completed = self._completed()
        if not self.known_objectives:
            values = [self._settled(other, final) for other, final in sorted(completed.items())]
            # The running ones at the lower bound stated at their latest report (module doc).
            for other, rows in sorted(self._intervals.items()):
                if (other == key or other in self._finals or other in self._stopped or other in self._paused
                        or rows[-1][1] is None):
                    continue
                values.append(rows[-1][1])
            finals, k = sorted(values, reverse=True), self._rank()
            return (finals[k - 1] if len(finals) >= k else None), f"the {_ordinal(k)} best"
        mine = self._known.get(key)
        if mine is None or len(completed) < self.k:
            return None, ""
        rivals = [v for k, v in completed.items()
                  if k in self._known and all(a >= b for a, b in zip(self._known[k], mine))]
        return (max(rivals) if rivals else None), "escaping domination by the front"

    def _rank(self) -> int:
        """The rank of the value to beat: ``k``, or the ``top_share`` of the candidates seen (reported or completed)
        if that ranks lower. With a fixed rank the bar climbs towards the eventual best as a search grows (the 5th of
        400 is its top 1.25%), and a smaller miss of the best's interval stops it: at 400 candidates of 20 epochs on
        the even mix the true best was stopped in 35% of runs at a fixed ``k`` 5, 10% with ``top_share`` 0.05
        (``benchmarks/results/early_stop-frontier-share-400x20.md``)."""
        return max(self.k, int(self.top_share * len(self._seen()) + 1e-9))

    def _seen(self) -> set[str]:
        """The candidates seen: reported or completed."""
        return self._curves.keys() | self._finals.keys()

    def _settled(self, key: str, final: float) -> float:
        """A completed candidate's value in the bar: the mean of its latest reports (its level), not its last
        noisy one (the k-th best of noisy finals is biased upwards: noise would raise the bar)."""
        cache = self.__dict__.setdefault("_settled_cache", {})  # a completed curve never changes
        if key not in cache:
            latest = [v for _, v in self._full_curve(key)[-SETTLE_POINTS:]]
            cache[key] = sum(latest) / len(latest)
        return cache[key]

    def _decide(self, key: str, curve: list[list[float]]) -> Decision:
        if len(curve) < self.min_points or curve[-1][0] >= self.max_steps - 1e-9:
            return GO_ON  # at the end of its budget there is nothing left to save
        made = self._interval(key)
        if made is None:
            return GO_ON
        self._record(key, curve[-1][0], made)
        if not made.references:
            return GO_ON
        low, high, spread = self._bounds(made)
        to_beat, words = self._to_beat(key)
        below = to_beat is not None and made.high < to_beat
        step = curve[-1][0]
        streak = self._below.get(key, [None, 0, None])  # [its latest report, reports below in a row, the first]
        if streak[0] != step:  # one count per report (should_stop may be asked twice)
            self._below[key] = streak = [step, streak[1] + 1, streak[2] if streak[1] else step] if below else \
                [step, 0, None]
        span = step - (step if streak[2] is None else streak[2])  # None: a streak saved before the span was kept
        stop = below and streak[1] >= CONFIRM and span >= self.confirm_span * self.max_steps - 1e-9
        pause = not stop and self._pause_now(key, to_beat)
        shown = (f"[{self.orient(made.low):.4g}, {self.orient(made.high):.4g}]" if made.bounded else
                 f"unbounded until {conformal.references_needed(self.threshold)} look-alike curves completed")
        reason = f"predicted {self.orient(made.predicted):.4g}, {100 * made.level:.0f}% interval {shown} " \
                 f"(from {made.references} look-alikes) at epoch {self.max_steps:g}"
        if to_beat is not None:
            beats = "beats " + words if not self.known_objectives else words
            bar = f" ({words}: {self.orient(to_beat):.4g})" if not self.known_objectives else ""
            reason += f"; P({beats}) {'<=' if stop else '>'} {100 * self.threshold:.3g}%{bar}"
            if pause:
                reason += ", but unlikely: paused until more curves completed"
            self._last_to_beat = to_beat
        return Decision(stop, reason, self.orient(made.predicted), spread, low=low, high=high, pause=pause)

    def _pause_now(self, key: str, to_beat: float | None) -> bool:
        """Whether to pause ``key`` rather than let it go on (:mod:`nas.pruners.freeze`); ``curve`` never pauses."""
        return False

    def _bounds(self, made: conformal.Interval) -> tuple[float | None, float | None, float | None]:
        """``made``'s low and high in the user's units (``None``: unbounded) and the normal spread of its width."""
        low, high = (None if not math.isfinite(v) else self.orient(v) for v in (made.low, made.high))
        if self.direction == "min":
            low, high = high, low
        spread = (made.high - made.low) / (2 * conformal_z(made.level)) if made.bounded and made.level > 0 else None
        return low, high, spread

    def _threshold(self) -> float | None:
        return getattr(self, "_last_to_beat", None)

    # --- its record: the intervals it stated, and how often they held ------------------------------------------

    def should_stop(self, id: Any) -> Decision:
        decision = super().should_stop(id)
        key, curve = str(id), self._curves.get(str(id))
        if decision.audited and curve and len(curve) >= self.min_points:  # an audited one's intervals count too
            made = self._interval(key)
            if made is not None:
                self._record(key, curve[-1][0], made)
                low, high, spread = self._bounds(made)
                decision = dataclasses.replace(decision, predicted=self.orient(made.predicted), spread=spread,
                                               low=low, high=high)
        return decision

    def _record(self, key: str, step: float, made: conformal.Interval) -> None:
        row = [step, made.low if math.isfinite(made.low) else None, made.high if math.isfinite(made.high) else None]
        rows = self._intervals.setdefault(key, [])
        if rows and rows[-1][0] == step:
            rows[-1] = row
        else:
            rows.append(row)

    def coverage(self) -> dict[str, Any]:
        """How often the bounded intervals stated for the candidates that completed with a final value (trained to
        the end, or let finish by the audit) held it: ``stated`` level, ``intervals`` counted, ``held``, ``rate``
        (``None`` before any), ``candidates``. Stopped candidates have no final, so they are not counted."""
        held = total = candidates = 0
        for key, rows in self._intervals.items():
            final = self._finals.get(key)
            bounded = [r for r in rows if r[1] is not None and r[2] is not None]
            if final is None or not bounded:
                continue
            candidates += 1
            total += len(bounded)
            held += sum(1 for _, low, high in bounded if low - 1e-12 <= final <= high + 1e-12)
        return {"stated": 1.0 - 2.0 * self.threshold, "intervals": total, "held": held,
                "rate": held / total if total else None, "candidates": candidates}

    def audit_report(self) -> dict[str, Any]:
        """The audit's false-stop measure (:meth:`Pruner.audit_report`) and the intervals' observed ``coverage``."""
        return {**super().audit_report(), "coverage": self.coverage()}

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "intervals": {k: [list(r) for r in v] for k, v in self._intervals.items()},
                "below": {k: list(v) for k, v in self._below.items()}}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Pruner:
        if isinstance(state, dict) and isinstance(state.get("params"), dict):  # saved before these rules: kept off
            state = {**state, "params": {**SAVED_BEFORE, **state["params"]}}
        pruner = super().from_state(state)
        assert isinstance(pruner, CurvePruner)
        pruner._intervals = {k: [list(r) for r in v] for k, v in state.get("intervals", {}).items()}
        pruner._below = {k: [*v, None][:3] for k, v in state.get("below", {}).items()}
        return pruner


def conformal_z(level: float) -> float:
    """The standard normal quantile of a central ``level`` interval (``spread``, for the charts that draw
    +- z spread)."""
    return NormalDist().inv_cdf(0.5 + level / 2) if 0 < level < 1 else 1.0


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
