"""The contract every pruner fulfils, and what they share: learning curves, direction, the audit, JSON state.

A pruner watches the learning curves of the candidates being trained and says which to stop early (seed 003's
early stop of unpromising candidates). The search's loop alone calls it (the central explorer): it
:meth:`~Pruner.report`\\ s every intermediate value a worker sends, asks :meth:`~Pruner.should_stop`, and
:meth:`~Pruner.complete`\\ s a candidate when its training ended (its final value, or ``None`` when it failed).

Steps are the curve's x axis, in epochs (fractional when a training reports more often than once per epoch);
``max_steps`` is the full training budget in the same unit. Values are in the user's units; ``direction``
says whether larger (``max``, an accuracy) or smaller (``min``, a loss) is better. Internally every value is
turned so that larger is better.

The audit: with ``audit`` > 0, that fraction of the candidates the pruner would stop (drawn from ``seed`` and
the candidate's id, so a resumed search audits the same ones) is let finish; their final values show how often
the pruner would have been wrong (:meth:`~Pruner.audit_report`).

Pausing (freeze-thaw, as in Swersky et al. 2014; only ``curve`` with ``pause`` > 0 pauses): a decision may say
``pause`` instead of stop or go on: the candidate's training is kept as it is and its slot takes another candidate.
A paused candidate is decided later by :meth:`~Pruner.review`: stopped (``stop``), resumed (it goes on from the
epoch it reached) or left paused; at the end of the search (``final``) every paused candidate that is not stopped is
resumed, so a pause alone never loses a candidate.
"""
from __future__ import annotations

import abc
import dataclasses
import hashlib
import json
import math
from typing import Any, ClassVar

import numpy as np

from nas.strategies.archive import MAX_SEED, Param, as_int

#: The version of :meth:`Pruner.state_dict`'s layout.
STATE_FORMAT = 1
DIRECTIONS = ("max", "min")

MIN_STEPS = Param("min_steps", "float", "Never stop a candidate before this many epochs.", low=0, high=1e6,
                  label="Minimum epochs")
AUDIT = Param("audit", "float", "Fraction of the candidates it would stop that are let finish, to measure the "
              "false-stop rate.", low=0, high=1, label="Audit fraction")


@dataclasses.dataclass(frozen=True)
class Decision:
    """What a pruner says of one candidate now.

    Attributes:
        stop: stop its training now.
        reason: why, in words (shown on the individual's page); empty when it goes on without remark.
        predicted: the predicted final value in the user's units, when the pruner predicts one.
        spread: the prediction's standard deviation (its 90% interval is ``predicted +- 1.645 spread``), or for an
            asymmetric interval the normal spread of the same width.
        audited: the pruner would have stopped it, but the audit lets it finish.
        low, high: the stated interval's bounds in the user's units, when the pruner states one (``None``: unbounded).
        pause: pause its training now (keep its state, free its slot); :meth:`Pruner.review` decides it later.
    """

    stop: bool
    reason: str = ""
    predicted: float | None = None
    spread: float | None = None
    audited: bool = False
    low: float | None = None
    high: float | None = None
    pause: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


GO_ON = Decision(False)


def unit(seed: int, *parts: Any) -> float:
    """A number in [0, 1) fixed by ``seed`` and ``parts`` (no generator state to save)."""
    digest = hashlib.sha256(json.dumps([seed, *parts]).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


class Pruner(abc.ABC):
    """Decides which candidates to stop from their partial learning curves.

    Subclasses list their :data:`PARAMS` (besides ``seed``, ``direction``, ``max_steps``) and implement
    :meth:`_decide`, which sees curves oriented so that larger is better. ``report`` of a non-finite value is
    kept out of the curve; no input makes a pruner raise except a bad id or parameter.
    """

    name: ClassVar[str]
    PARAMS: ClassVar[tuple[Param, ...]] = (MIN_STEPS, AUDIT)

    def __init__(self, seed: int = 0, direction: str = "max", max_steps: float = 1.0, **params: Any) -> None:
        if as_int(seed) is None or not 0 <= seed <= MAX_SEED:
            raise ValueError(f"`seed` must be an integer in [0, {MAX_SEED}] (seed={seed!r}).")
        if direction not in DIRECTIONS:
            raise ValueError(f'`direction` must be "max" or "min" (direction={direction!r}).')
        steps = _finite(max_steps)
        if steps is None or steps <= 0:
            raise ValueError(f"`max_steps` must be a number > 0 (max_steps={max_steps!r}).")
        self.seed, self.direction, self.max_steps = int(seed), direction, steps
        self.params = self.check_params(params)
        for name, value in self.params.items():
            setattr(self, name, value)
        self._curves: dict[str, list[list[float]]] = {}  #: id -> [[step, oriented value], ...], steps rising
        self._finals: dict[str, float | None] = {}  #: completed ids -> oriented final (None: failed)
        self._stopped: dict[str, dict[str, Any]] = {}  #: ids told to stop -> their decision
        self._audited: dict[str, dict[str, Any]] = {}  #: ids let finish by the audit -> their decision
        self._known: dict[str, list[float]] = {}  #: ids -> objectives known before training (multi-objective)
        self._paused: dict[str, dict[str, Any]] = {}  #: ids paused now -> the decision that paused them
        self._resumed: dict[str, float] = {}  #: ids paused once and resumed -> the step they were paused at

    # --- parameters ---------------------------------------------------------------------------------------

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> dict[str, Any]:
        """Every parameter checked and normalised; ``ValueError`` names a bad or unknown one."""
        known = {param.name: param for param in cls.PARAMS}
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise ValueError(f"The {cls.name!r} pruner has no parameter {', '.join(map(repr, unknown))}; "
                             f"its parameters are {', '.join(known) or 'none'} (params={params!r}).")
        defaults = cls.default_params()
        checked = {name: param.check(params.get(name, defaults[name])) for name, param in known.items()}
        return {name: cls._check_extra(name, value) for name, value in checked.items()}

    @classmethod
    def _check_extra(cls, name: str, value: Any) -> Any:
        """A subclass hook for parameters of its own types."""
        return value

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        return {param.name: cls.DEFAULTS[param.name] for param in cls.PARAMS}

    DEFAULTS: ClassVar[dict[str, Any]] = {"min_steps": 1.0, "audit": 0.0}

    @classmethod
    def describe_params(cls) -> list[dict[str, Any]]:
        """JSON descriptions of the parameters, as a strategy's ``describe_params()``, for a form."""
        defaults = cls.default_params()
        return json.loads(json.dumps([
            {**dataclasses.asdict(p), "label": p.label or p.name.replace("_", " ").capitalize(),
             "default": defaults[p.name]} for p in cls.PARAMS]))

    # --- the interface --------------------------------------------------------------------------------------

    def orient(self, value: float) -> float:
        """A value in the user's units as larger-is-better (and back: it is its own inverse)."""
        return value if self.direction == "max" else -value

    def report(self, id: Any, step: float, value: float) -> None:
        """Record ``value`` at ``step`` of candidate ``id``; a step at or before its last one replaces nothing."""
        key, step_value, number = str(id), _finite(step), _finite(value)
        if key in self._finals or step_value is None or step_value < 0:
            return
        curve = self._curves.setdefault(key, [])
        if number is None or (curve and step_value <= curve[-1][0]):
            return
        curve.append([step_value, self.orient(number)])

    def should_stop(self, id: Any) -> Decision:
        """Whether to stop ``id`` now; never before ``min_steps``, never once it completed or was stopped."""
        key = str(id)
        curve = self._curves.get(key)
        if (key in self._finals or key in self._stopped or key in self._paused or not curve
                or curve[-1][0] < self.min_steps):
            return GO_ON
        if key in self._audited:
            saved = self._audited[key]
            return Decision(False, saved["reason"], saved["predicted"], saved["spread"], audited=True,
                            low=saved.get("low"), high=saved.get("high"))
        try:
            decision = self._decide(key, curve)
        except (ArithmeticError, ValueError, np.linalg.LinAlgError):  # never let a fit reach the loop
            return GO_ON
        if decision.pause:
            self._paused[key] = {**decision.to_dict(), "step": curve[-1][0]}
        if not decision.stop:
            return decision
        record = {**decision.to_dict(), "step": curve[-1][0], "threshold": self._threshold()}
        if self.audit > 0 and unit(self.seed, "audit", key) < self.audit:
            record["audited"] = True
            self._audited[key] = record
            return dataclasses.replace(decision, stop=False, audited=True)
        self._stopped[key] = record
        return decision

    def complete(self, id: Any, final: float | None) -> None:
        """``id``'s evaluation ended: its final value after the full budget, ``None`` when it failed or was
        pruned (a partial curve is no completed curve). One that was told to stop but finished first (the stop
        came too late) completes with its final value like any other."""
        key = str(id)
        if key in self._finals:
            return
        self._paused.pop(key, None)
        number = _finite(final)
        self._finals[key] = None if number is None else self.orient(number)

    def paused(self) -> list[str]:
        """The ids paused now (ordered)."""
        return sorted(self._paused)

    def review(self, final: bool = False, resume: int = 1) -> list[tuple[str, Decision]]:
        """Decide the paused candidates now: ``[(id, decision), ...]`` for those decided, in the order of ids;
        ``stop`` (it is then :meth:`stopped`; complete it with ``None``) or not (resume it: it goes on from the step
        it was paused at); the others stay paused. With ``final`` (no new candidate will start), at most ``resume``
        are resumed (the most promising first: more may be stopped by the time a slot frees for the rest); a paused
        candidate the pruner cannot stop is resumed, never dropped. Deterministic: a resumed search reviews alike."""
        decided: list[tuple[str, Decision]] = []
        hold: list[tuple[float, str, Decision]] = []
        for key in self.paused():
            decision, rank = self._review(key, final)
            if decision is None:
                continue
            if decision.stop:
                self._stopped[key] = {**decision.to_dict(), "step": self._paused.pop(key)["step"],
                                      "threshold": self._threshold()}
                decided.append((key, decision))
            else:
                hold.append((-rank, key, decision))
        for _, key, decision in sorted(hold)[:max(resume, 0) if final else len(hold)]:
            self._resumed[key] = self._paused.pop(key)["step"]
            decided.append((key, decision))
        return sorted(decided, key=lambda pair: pair[0])

    def _review(self, key: str, final: bool) -> tuple[Decision | None, float]:
        """A paused candidate's decision (``None``: stays paused) and, when resumed, its rank (higher first).
        Pruners that never pause resume whatever was paused."""
        return Decision(False, "resumed"), 0.0

    def know(self, id: Any, objectives: dict[str, float]) -> None:
        """The objectives of ``id`` known before training (``params``, ...); only multi-objective pruners use them."""

    def stopped(self, id: Any) -> Decision | None:
        """The decision that stopped ``id``, ``None`` if it was not stopped."""
        record = self._stopped.get(str(id))
        if record is None:
            return None
        return Decision(True, record["reason"], record["predicted"], record["spread"], low=record.get("low"),
                        high=record.get("high"))

    def curve(self, id: Any) -> list[tuple[float, float]]:
        """The curve of ``id`` in the user's units."""
        return [(s, self.orient(v)) for s, v in self._curves.get(str(id), [])]

    def audit_report(self) -> dict[str, Any]:
        """The audit's measure: ``audited`` candidates let finish, ``finished`` of them with a final value,
        ``false_stops`` among those that beat the threshold the pruner predicted they would miss, ``rate``."""
        finished = [(k, r) for k, r in self._audited.items() if self._finals.get(k) is not None]
        false = sum(1 for k, r in finished if r["threshold"] is not None and self._finals[k] >= r["threshold"])
        return {"audited": len(self._audited), "finished": len(finished), "false_stops": false,
                "rate": false / len(finished) if finished else None}

    # --- for subclasses -------------------------------------------------------------------------------------

    @abc.abstractmethod
    def _decide(self, key: str, curve: list[list[float]]) -> Decision:
        """The decision for ``key`` whose curve (oriented, at least one point past ``min_steps``) is ``curve``."""

    def _threshold(self) -> float | None:
        """The oriented final value a stopped candidate is predicted to miss (for the audit), if any."""
        return None

    def _completed(self) -> dict[str, float]:
        """Completed candidates with a final value (oriented)."""
        return {k: v for k, v in self._finals.items() if v is not None}

    def _value_at(self, key: str, step: float) -> float | None:
        """The best value of ``key``'s curve up to ``step`` (``None`` before its first point)."""
        values = [v for s, v in self._curves.get(key, []) if s <= step + 1e-9]
        return max(values) if values else None

    # --- state ----------------------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to decide on as JSON data (a pruner draws nothing from a generator: its random
        choices are hashes of the seed and ids, so there is no generator state)."""
        return json.loads(json.dumps({
            "name": self.name, "format": STATE_FORMAT, "seed": self.seed, "direction": self.direction,
            "max_steps": self.max_steps, "params": self.params, "curves": self._curves, "finals": self._finals,
            "stopped": self._stopped, "audited": self._audited, "known": self._known, "paused": self._paused,
            "resumed": self._resumed,
        }, allow_nan=False))

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Pruner:
        if not isinstance(state, dict) or state.get("name") != cls.name or state.get("format") != STATE_FORMAT:
            raise ValueError(f"This state is not a {cls.name!r} pruner state of format {STATE_FORMAT} "
                             f"(name={getattr(state, 'get', lambda _: None)('name')!r}).")
        pruner = cls(state["seed"], state["direction"], state["max_steps"], **state["params"])
        pruner._curves = {k: [list(p) for p in v] for k, v in state["curves"].items()}
        pruner._finals = dict(state["finals"])
        pruner._stopped = dict(state["stopped"])
        pruner._audited = dict(state["audited"])
        pruner._known = {k: list(v) for k, v in state.get("known", {}).items()}
        pruner._paused = dict(state.get("paused", {}))
        pruner._resumed = dict(state.get("resumed", {}))
        return pruner

