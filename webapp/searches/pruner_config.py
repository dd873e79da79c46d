"""The early-stopping part of a search's configuration, checked by ``config.check_config``:

```
"pruner": {"name": "curve", "k": 5, "threshold": 0.05, "min_steps": 2, "audit": 0.1},   # nas.pruners
"evaluation": {..., "report_every": 20}     # training steps between reports (null: once per epoch)
```
A pruner's parameters are defined once, in ``nas.pruners`` (``describe_params()`` for the form); its seed is
the strategy's, its budget the training's epochs. No torch here.
"""
from __future__ import annotations

from typing import Any

from nas.pruners import PRUNERS, get_pruner

#: The most steps between two reports (a report per step is allowed, if slow).
MAX_REPORT_EVERY = 1_000_000
#: Simulated evaluations' learning curves: the old linear ramp, or realistic saturating curves.
CURVES = ("linear", "realistic")


class PrunerConfigError(ValueError):
    """A bad ``pruner`` or ``evaluation.report_every``: ``field`` is the dotted path (``config.ConfigError``)."""

    def __init__(self, field: str, message: str) -> None:
        self.field, self.message = field, message
        super().__init__(f"{field}: {message}")


def check_pruner(data: Any, epochs: int) -> dict[str, Any] | None:
    """``{"name": ..., **params}`` with every parameter's default filled in; ``None`` for no pruner."""
    if data is None:
        return None
    if isinstance(data, str):
        data = {"name": data}
    if not isinstance(data, dict):
        raise PrunerConfigError("pruner", f'must be an object {{"name": ..., params}} (got {str(data)[:100]})')
    name = data.get("name", "none")
    if not isinstance(name, str) or name not in PRUNERS:
        raise PrunerConfigError("pruner.name", f"must be one of {', '.join(PRUNERS)} (got {name!r})")
    params = {k: v for k, v in data.items() if k != "name"}
    try:
        pruner = get_pruner(name, 0, "max", float(max(epochs, 1)), **params)
    except (TypeError, ValueError) as error:
        text = str(error)
        bad = next((p for p in [*params, *PRUNERS[name].default_params()] if f"`{p}`" in text or f"'{p}'" in text),
                   None)
        raise PrunerConfigError(f"pruner.{bad}" if bad else "pruner", text) from None
    return {"name": name, **pruner.params}


def check_report_every(value: Any) -> int | None:
    """Training steps between two reports, or ``None`` (once per epoch)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer() \
            or not 1 <= value <= MAX_REPORT_EVERY:
        raise PrunerConfigError("evaluation.report_every", f"must be an integer in [1, {MAX_REPORT_EVERY}] or null "
                                                           f"(once per epoch) (got {value!r})")
    return int(value)


def check_curves(value: Any) -> str:
    if value not in CURVES:
        raise PrunerConfigError("evaluation.curves", f"must be one of {', '.join(CURVES)} (got {value!r})")
    return value


def describe() -> list[dict[str, Any]]:
    """Every pruner with its parameters, for the form (as the strategies are described)."""
    return [{"name": name, "params": cls.describe_params(), "help": (cls.__doc__ or "").split("\n\n")[0].strip()}
            for name, cls in PRUNERS.items()]
