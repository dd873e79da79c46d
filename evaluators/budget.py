"""The training budget of one evaluation: a frozen dataclass, and the one definition of its fields (defaults,
bounds, choices, labels) that the configuration checker, the create-search form and the trainer all read.
Imports no torch, so the web server and the control loop check a budget without loading PyTorch."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from nas.strategies.archive import MAX_SEED

OPTIMIZERS = ("adam", "adamw", "sgd")
PRECISIONS = ("fp32", "bf16")


@dataclasses.dataclass(frozen=True)
class FieldRule:
    """How one budget field is checked and shown: its type, bounds (inclusive) or choices, label and help."""

    kind: type
    label: str
    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    optional: bool = False  #: ``None`` is allowed (and means "no limit")
    positive: bool = False  #: ``low`` is excluded: the value must be above it (a step size, a time cap)

    def allowed(self) -> str:
        if self.choices:
            return f"one of {', '.join(self.choices)}"
        kind = "an integer" if self.kind is int else "a finite number"
        low, high = (int(self.low), int(self.high)) if self.kind is int else (self.low, self.high)
        return f"{kind} {'>' if self.positive else '>='} {low} and <= {high}" + (" (or null)" if self.optional else "")

    def check(self, name: str, value: Any) -> Any:
        """``value`` normalised (whole floats are integers for an ``int`` field), or ``ValueError`` naming it."""
        if value is None and self.optional:
            return None
        if self.choices:
            if value not in self.choices:
                raise ValueError(f"`{name}` must be {self.allowed()} ({name}={value!r}).")
            return value
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if (not number or (self.kind is int and not float(value).is_integer()) or not self.low <= value <= self.high
                or (self.positive and value <= self.low)):
            raise ValueError(f"`{name}` must be {self.allowed()} ({name}={value!r}).")
        return self.kind(value)


def _field(default: Any, rule: FieldRule) -> Any:
    return dataclasses.field(default=default, metadata={"rule": rule})


@dataclasses.dataclass(frozen=True)
class TrainingBudget:
    """How one individual is trained: the same for every individual of a search.

    Args:
        epochs: passes over the training split.
        batch_size: images per step (capped at the training split's size; a partial last batch is dropped, so
            every step has the same shape and ``cudnn.benchmark`` tunes once).
        learning_rate: the optimizer's step size.
        weight_decay: L2 penalty (decoupled for ``adamw``).
        max_seconds: wall-time cap of the whole evaluation (``None``: no cap); past it the result is ``timeout``.
        seed: fixes the weights' initialisation, the batch order and the train/validation split.
        optimizer: ``adam`` (seed 000's choice), ``adamw`` or ``sgd`` (momentum 0.9, Nesterov); cross-entropy loss.
        precision: ``fp32``, or ``bf16`` autocast with channels_last tensors (faster with several slots per GPU).
    """

    epochs: int = _field(3, FieldRule(int, "Epochs", "Passes over the training split per individual.", 1, 1000))
    batch_size: int = _field(64, FieldRule(int, "Batch size", "Images per training step.", 1, 65536))
    learning_rate: float = _field(1e-3, FieldRule(float, "Learning rate", "The optimizer's step size.", 0.0, 1e6,
                                                             positive=True))
    weight_decay: float = _field(0.0, FieldRule(float, "Weight decay", "L2 penalty (decoupled for adamw).", 0.0, 1.0))
    max_seconds: float | None = _field(None, FieldRule(
        float, "Time cap (s)", "Wall-time cap of one evaluation; past it the individual fails with timeout.",
        0.0, 7 * 86400.0, optional=True, positive=True))
    seed: int = _field(0, FieldRule(int, "Training seed", "Fixes initial weights, batch order and the validation "
                                    "split.", 0, MAX_SEED))
    optimizer: str = _field("adam", FieldRule(str, "Optimizer", "Cross-entropy loss with this optimizer.",
                                              choices=OPTIMIZERS))
    precision: str = _field("fp32", FieldRule(str, "Precision", "bf16: autocast with channels_last (faster with "
                                              "several slots per GPU).", choices=PRECISIONS))

    def __post_init__(self) -> None:
        for name, rule in rules().items():
            rule.check(name, getattr(self, name))

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> TrainingBudget:
        """The budget of a search's ``training`` dict; absent keys take their defaults, unknown keys are an error.
        Whole floats are accepted for integer fields (JSON may carry ``3.0``)."""
        data = dict(data or {})
        names = list(rules())
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise ValueError(f"Unknown training field(s) {', '.join(map(repr, unknown))}; the fields are {', '.join(names)}.")
        checked = {name: rule.check(name, data[name]) for name, rule in rules().items() if name in data}
        return cls(**checked)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; ``TrainingBudget.from_dict(budget.to_dict()) == budget``."""
        return dataclasses.asdict(self)


def rules() -> dict[str, FieldRule]:
    """Every budget field's rule, in declaration order."""
    return {field.name: field.metadata["rule"] for field in dataclasses.fields(TrainingBudget)}


def defaults() -> dict[str, Any]:
    """Every budget field's default."""
    return {field.name: field.default for field in dataclasses.fields(TrainingBudget)}
