"""The training budget of one evaluation, as a frozen dataclass. Imports no torch, so the web server and the
control loop can check a budget without loading PyTorch."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

OPTIMIZERS = ("adam", "adamw", "sgd")
PRECISIONS = ("fp32", "bf16")


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

    epochs: int = 3
    batch_size: int = 64
    learning_rate: float = 1e-3
    weight_decay: float = 0.0
    max_seconds: float | None = None
    seed: int = 0
    optimizer: str = "adam"
    precision: str = "fp32"

    def __post_init__(self) -> None:
        _check_int("epochs", self.epochs, 1)
        _check_int("batch_size", self.batch_size, 1)
        _check_int("seed", self.seed, 0)
        _check_float("learning_rate", self.learning_rate)
        _check_float("weight_decay", self.weight_decay)
        if self.max_seconds is not None:
            _check_float("max_seconds", self.max_seconds)
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"`optimizer` must be one of {', '.join(OPTIMIZERS)} (optimizer={self.optimizer!r}).")
        if self.precision not in PRECISIONS:
            raise ValueError(f"`precision` must be one of {', '.join(PRECISIONS)} (precision={self.precision!r}).")

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> TrainingBudget:
        """The budget of a search's ``training`` dict; absent keys take their defaults, unknown keys are an error.
        Whole floats are accepted for integer fields (JSON may carry ``3.0``)."""
        data = dict(data or {})
        names = [field.name for field in dataclasses.fields(cls)]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise ValueError(f"Unknown training field(s) {', '.join(map(repr, unknown))}; the fields are {', '.join(names)}.")
        for name in ("epochs", "batch_size", "seed"):
            value = data.get(name)
            if isinstance(value, float) and value.is_integer():
                data[name] = int(value)
        for name in ("learning_rate", "weight_decay", "max_seconds"):
            value = data.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                data[name] = float(value)
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; ``TrainingBudget.from_dict(budget.to_dict()) == budget``."""
        return dataclasses.asdict(self)


def _check_int(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"`{name}` must be an integer >= {low} ({name}={value!r}).")


def _check_float(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"`{name}` must be a finite number >= 0 ({name}={value!r}).")
