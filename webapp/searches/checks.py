"""The checks every part of a search's configuration is made of: a bounded number, an object with known fields,
a choice, an evaluation pool; each failure a :class:`ConfigError` naming the dotted field. ``config`` (architecture
searches) and ``weights_config`` (weight searches) build on these, so neither imports the other's internals.
"""
from __future__ import annotations

import math
import re
from typing import Any

#: Evaluation pools are the queues evaluation workers serve: ``eval`` or ``eval.<name>`` (never ``control``).
POOL = re.compile(r"^eval(\.[A-Za-z0-9_-][A-Za-z0-9_.-]{0,94})?$")
POOL_RULE = "eval, or eval.<name> with letters, digits, '.', '_' or '-' (an evaluation pool, never control)"


class ConfigError(ValueError):
    """A bad configuration: ``field`` is the dotted path of the offending value (for form errors)."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")


def number(field: str, value: Any, kind: type, low: float, high: float) -> Any:
    if value is None:
        raise ConfigError(field, "a value is required")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(field, f"must be a number (got {value!r})")
    if kind is int and not float(value).is_integer():
        raise ConfigError(field, f"must be an integer (got {value!r})")
    if not math.isfinite(value):
        raise ConfigError(field, f"must be finite (got {value!r})")
    if not low <= value <= high:
        raise ConfigError(field, f"must be in [{low}, {high}] (got {value!r})")
    return kind(value)


def section(section: str, data: Any, names: list[str]) -> dict[str, Any]:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(section, f"must be an object (got {data!r})")
    unknown = sorted(set(data) - set(names), key=str)
    if unknown:
        raise ConfigError(f"{section}.{unknown[0]}", f"unknown field; the fields are {', '.join(names)}")
    return data


def fields(section: str, data: dict[str, Any], spec: dict[str, tuple[Any, type, float, float]]) -> dict[str, Any]:
    return {name: number(f"{section}.{name}", data.get(name, default), kind, low, high)
            for name, (default, kind, low, high) in spec.items()}


def choice(field: str, value: Any, choices: tuple[str, ...] | list[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(field, f"must be one of {', '.join(choices)} (got {value!r})")
    return value


def check_pool(value: Any) -> str:
    if not isinstance(value, str) or not POOL.match(value):
        raise ConfigError("pool", f"must be {POOL_RULE} (got {value!r})")
    return value
