"""``curve``: learning-curve extrapolation (Domhan, Springenberg and Hutter, IJCAI 2015), stdlib + numpy.

How it predicts: :mod:`nas.pruners.extrapolation` (parametric families, a residual bootstrap, the population's
shapes).

When it stops. Once a candidate has trained ``min_steps`` epochs and has ``min_points`` reports, it is stopped
when ``P(final >= the value to beat) < threshold`` under a normal law with the prediction's mean and spread.
The value to beat is the ``k``-th best among the completed candidates' finals and the running candidates'
pessimistic finals (predicted mean minus ``RUNNING_Z`` spreads): the population's predicted ``k``-th best, so a
search prunes before ``k`` candidates completed. A completed candidate counts at its full curve's fitted
value at the end of the budget rather than its last noisy observation (the ``k``-th best of noisy values is
biased upwards). Every prediction used to decide (the candidate's and the running ones') is calibrated on
the population first: the mean moves by the median standardised error ``(final - mean) / spread`` that the
same predictor (five families) made on the completed curves cut at as many points (within ``CALIBRATE_MAX``
spreads, from ``CALIBRATE_MIN`` such curves on; on the synthetic curves the families over-predict by about half
a spread when a third of the budget is seen). Those errors are computed once, when a candidate completes, for
every prefix length, and kept in the state (``calibration``), so a report only takes a median of stored
numbers. Every prediction is cached per curve length and shapes: a pure function of the state. The
trend guard objects to a stop when the straight line through the last 3 reports, counted at half its rise
(``TREND_SHARE``), would still reach the value to beat. The families saturate too early on late-rising
S-shaped curves (the over-pruning NNI and Optuna users report, nni#2006, optuna#1447); on the benchmark's
synthetic curves the guard took the runs that stopped a top-5 candidate from 20% to 0% for a few percent more
epochs (before the population's bar). Multi-objective (nsga2): with ``known_objectives`` (objectives known
before training, such as ``params``; given per candidate by :meth:`CurvePruner.know`), the value to beat
is the best trained final among the completed candidates at least as good in every known objective: a
candidate unlikely to beat it is predicted to be dominated, with the configured confidence.
"""
from __future__ import annotations

import json
import math
from typing import Any, ClassVar

import numpy as np

from nas.pruners.base import AUDIT, GO_ON, MIN_STEPS, Decision, Pruner
from nas.pruners.extrapolation import Z90, predict, prob_above, shape_of
from nas.strategies.archive import Param
from nas.strategies.objectives import check_objectives

#: The population's calibration: from ``CALIBRATE_MIN`` completed curves on, a prediction's mean moves by the
#: median standardised error made on them cut at as many points, at most ``CALIBRATE_MAX`` spreads.
CALIBRATE_MIN = 5
CALIBRATE_MAX = 1.0
#: The population family (the shapes of the completed curves) joins the mixture once this many are known.
POPULATION_MIN = 3
#: A completed curve lends its shape when it was seen to at least this share of the budget.
POPULATION_REACH = 0.9
#: A running candidate counts in the value to beat at its predicted final minus this many spreads (a pessimistic
#: guess: with a calibrated spread, its final is above it about 84% of the time).
RUNNING_Z = 1.0



TOP_K = Param("k", "int", "Stop a candidate unlikely to beat the k-th best completed one.", low=1, high=10_000,
              label="Compare with the k-th best")
THRESHOLD = Param("threshold", "float", "Stop when the probability of beating it is below this.", low=0, high=0.5,
                  label="Probability threshold")
MIN_POINTS = Param("min_points", "int", "Reports needed before a curve is extrapolated.", low=4, high=1_000,
                   label="Minimum reports")
UPPER = Param("upper", "float", "The best value the watched metric can take (1 for an accuracy): predictions are "
              "capped there. None: unbounded.", low=-1e12, high=1e12, optional=True, label="Best possible value")
KNOWN = Param("known_objectives", "objectives", 'Multi-objective: the objectives known before training, as '
              '[name, "max" | "min"] pairs (the search fills them from nsga2\'s).', optional=True,
              label="Known objectives")


class CurvePruner(Pruner):
    """Stops a candidate whose extrapolated final value is unlikely to beat the ``k``-th best (module doc)."""

    name = "curve"
    PARAMS: ClassVar[tuple[Param, ...]] = (MIN_STEPS, TOP_K, THRESHOLD, MIN_POINTS, AUDIT, UPPER, KNOWN)
    DEFAULTS: ClassVar[dict[str, Any]] = {"min_steps": 1.0, "k": 5, "threshold": 0.05, "min_points": 4,
                                          "audit": 0.0, "upper": None, "known_objectives": None}
    k: int
    threshold: float
    min_points: int
    known_objectives: list[list[str]] | None
    upper: float | None

    def _cap(self) -> float | None:
        """``upper`` in the oriented (larger is better) units the fits see; only a bound on the better side caps."""
        return self.upper if self.upper is not None and self.direction == "max" else \
            (-self.upper if self.upper is not None else None)

    @classmethod
    def _check_extra(cls, name: str, value: Any) -> Any:
        if name == "known_objectives" and value is not None:
            return check_objectives(value) if value else []
        return value

    def know(self, id: Any, objectives: dict[str, float]) -> None:
        """The objectives of ``id`` known before training (multi-objective), oriented as configured."""
        if not self.known_objectives:
            return
        key = str(id)
        if key in self._known:
            return
        row = []
        for name, direction in self.known_objectives:
            value = objectives.get(name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                return
            row.append(float(value) if direction == "max" else -float(value))
        self._known[key] = row

    def prediction(self, id: Any) -> tuple[float, float] | None:
        """The predicted final value of ``id`` (user's units) and its standard deviation, if it can be made."""
        made = self._calibrated(str(id))
        return None if made is None else (self.orient(made[0]), made[1])

    # --- the population's calibration (errors stored once per completed candidate) ---------------------------

    def __init__(self, seed: int = 0, direction: str = "max", max_steps: float = 1.0, **params: Any) -> None:
        super().__init__(seed, direction, max_steps, **params)
        #: completed ids -> their prefix predictions' standardised errors (:meth:`_prefix_errors`)
        self._calibration: dict[str, list[float | None]] = {}

    def complete(self, id: Any, final: float | None) -> None:
        key = str(id)
        known = key in self._finals
        super().complete(id, final)
        if not known and self._finals.get(key) is not None:
            errors = self._prefix_errors(key, self._finals[key])
            if errors:
                self._calibration[key] = errors

    def _prefix_errors(self, key: str, final: float) -> list[float | None]:
        """The standardised errors ``(smoothed final - mean) / spread`` of the predictions (five families) made on
        ``key``'s completed curve cut at ``min_points``, ``min_points + 1``, ... points (up to one point short of
        the whole), ``None`` where none was made; empty when the curve did not reach the end of the budget."""
        curve = self._curves.get(key, [])
        if not curve or curve[-1][0] < self.max_steps - 1e-9:
            return []
        target = self._smoothed(key, final)
        errors: list[float | None] = []
        for n in range(self.min_points, len(curve)):
            cut = curve[:n]
            guess = predict([s for s, _ in cut], [v for _, v in cut], self.max_steps, self.seed, key, self._cap())
            error = None if guess is None else (target - guess[0]) / guess[1]
            errors.append(error if error is None or math.isfinite(error) else None)
        return errors

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["calibration"] = json.loads(json.dumps(self._calibration, allow_nan=False))
        return state

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Pruner:
        pruner = super().from_state(state)
        assert isinstance(pruner, CurvePruner)
        pruner._calibration = {k: list(v) for k, v in state.get("calibration", {}).items()}
        return pruner

    def _shift(self, n: int) -> float:
        """The median of the stored errors at ``n`` points (in spreads, clipped), 0 below ``CALIBRATE_MIN``."""
        cache = self.__dict__.setdefault("_shift_cache", {})
        signature = (n, len(self._calibration))  # errors are only ever added, with the completed candidates
        if signature not in cache:
            index = n - self.min_points
            errors = [v[index] for k, v in sorted(self._calibration.items())
                      if 0 <= index < len(v) and v[index] is not None]
            cache[signature] = (float(np.clip(np.median(errors), -CALIBRATE_MAX, CALIBRATE_MAX))
                                if len(errors) >= CALIBRATE_MIN else 0.0)
        return cache[signature]

    def _calibrated(self, key: str) -> tuple[float, float] | None:
        """``key``'s prediction, its mean moved by the population's calibration at its number of points."""
        made = self._predicted(key)
        if made is None:
            return made
        return made[0] + self._shift(len(self._curves.get(key, []))) * made[1], made[1]

    def _shapes(self) -> list[tuple[str, tuple[float, ...]]] | None:
        """The shapes of the completed curves that reached the end of the budget (the population's prior), in
        the order of ids, once ``POPULATION_MIN`` of them are known. Derived from the curves alone (cached, not
        saved): a restored pruner rebuilds the same."""
        known = self.__dict__.get("_shapes_known")
        if known is not None and known[0] == len(self._finals):  # finals are only ever added
            return known[1]
        cache = self.__dict__.setdefault("_shape_cache", {})
        shapes: list[tuple[str, tuple[float, ...]]] = []
        for key in sorted(self._completed()):
            if key not in cache:
                curve = self._curves.get(key, [])
                cache[key] = (shape_of([s for s, _ in curve], [v for _, v in curve], self.max_steps)
                              if curve and curve[-1][0] >= POPULATION_REACH * self.max_steps else None)
            if cache[key] is not None and cache[key] not in shapes:
                shapes.append(cache[key])
        self._shapes_known = (len(self._finals), shapes if len(shapes) >= POPULATION_MIN else None)
        return self._shapes_known[1]

    def _predicted(self, key: str) -> tuple[float, float] | None:
        """The (oriented) prediction for ``key``'s curve as it is now, cached per curve length and shapes: a pure
        function of the state, so a restored pruner computes the same."""
        curve = self._curves.get(key, [])
        shapes = self._shapes()
        signature = (len(curve), tuple(shapes or ()))
        cache = self.__dict__.setdefault("_prediction_cache", {})
        if key not in cache or cache[key][0] != signature:
            cache[key] = (signature, predict([s for s, _ in curve], [v for _, v in curve], self.max_steps,
                                             self.seed, key, self._cap(), shapes))
        return cache[key][1]

    def _smoothed(self, key: str, final: float) -> float:
        """A completed candidate's final value without its last observation's noise: its full curve's fitted value
        at the end of the budget (when its curve reached it), else the final reported."""
        curve = self._curves.get(key, [])
        if not curve or curve[-1][0] < self.max_steps - 1e-9:
            return final
        made = self._predicted(key)
        return final if made is None else made[0]

    def _to_beat(self, key: str) -> tuple[float | None, str]:
        completed = self._completed()
        if not self.known_objectives:
            values = [self._smoothed(other, final) for other, final in sorted(completed.items())]
            for other, curve in self._curves.items():  # the running ones, at a pessimistic guess of their final
                if (other == key or other in self._finals or other in self._stopped
                        or len(curve) < self.min_points or curve[-1][0] < self.min_steps):
                    continue
                made = self._calibrated(other)
                if made is not None:
                    values.append(made[0] - RUNNING_Z * made[1])
            finals = sorted(values, reverse=True)
            return (finals[self.k - 1] if len(finals) >= self.k else None), f"the {_ordinal(self.k)} best"
        mine = self._known.get(key)
        if mine is None or len(completed) < self.k:
            return None, ""
        rivals = [v for k, v in completed.items()
                  if k in self._known and all(a >= b for a, b in zip(self._known[k], mine))]
        return (max(rivals) if rivals else None), "escaping domination by the front"

    def _decide(self, key: str, curve: list[list[float]]) -> Decision:
        if len(curve) < self.min_points:
            return GO_ON
        made = self._calibrated(key)
        if made is None:
            return GO_ON
        mean, spread = made
        to_beat, words = self._to_beat(key)
        if to_beat is None:
            return Decision(False, "", self.orient(mean), spread)
        chance = prob_above(mean, spread, to_beat)
        if chance < self.threshold and _trend_reaches(curve, self.max_steps, to_beat):
            chance = self.threshold  # a late riser: its recent trend alone would still beat it (see the module doc)
        reason = (f"predicted {self.orient(mean):.4g} +- {Z90 * spread:.2g} at epoch {self.max_steps:g}; "
                  f"P({'beats ' + words if not self.known_objectives else words}) = {100 * chance:.1f}%")
        self._last_to_beat = to_beat
        return Decision(chance < self.threshold, reason, self.orient(mean), spread)

    def _threshold(self) -> float | None:
        return getattr(self, "_last_to_beat", None)


#: How many of the latest reports the trend guard fits its line to.
TREND_POINTS = 3
#: The share of the straight line's rise the guard counts on (saturating curves rise less than their tangent).
TREND_SHARE = 0.5


def _trend_reaches(curve: list[list[float]], max_steps: float, target: float) -> bool:
    """Whether half the rise of the straight line through the latest reports reaches ``target`` by ``max_steps``: the guard
    against stopping a curve that is still rising fast (the parametric families can saturate too early on a
    late-rising, S-shaped curve; NNI and Optuna users report exactly that over-pruning)."""
    points = curve[-TREND_POINTS:]
    if len(points) < 2:
        return False
    x = np.array([p[0] for p in points])
    y = np.array([p[1] for p in points])
    if np.ptp(x) <= 0 or not np.isfinite(y).all():
        return False
    slope = float(np.polyfit(x, y, 1)[0])
    return slope > 0 and float(y[-1]) + TREND_SHARE * slope * (max_steps - float(x[-1])) >= target


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
