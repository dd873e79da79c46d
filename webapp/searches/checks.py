"""The checks every part of a search's configuration is made of: a bounded number, an object with known fields,
a choice, an evaluation pool; each failure a :class:`ConfigError` naming the dotted field. ``config`` (architecture
searches) and ``weights_config`` (weight searches) build on these, so neither imports the other's internals.
"""
from __future__ import annotations

import json
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


def shown(value: Any) -> str:
    """``value`` as the JSON a client sent spells it (``true``, ``null``, ``"text"``), at most 100 characters."""
    try:
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)[:100]
    return text if len(text) <= 100 else text[:97] + "..."


def number(field: str, value: Any, kind: type, low: float, high: float, positive: bool = False) -> Any:
    """``value`` as ``kind`` within ``[low, high]`` (above 0 when ``positive``); booleans are not numbers."""
    if value is None:
        raise ConfigError(field, "a value is required")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(field, f"must be a number (got {shown(value)})")
    if kind is int and not float(value).is_integer():
        raise ConfigError(field, f"must be an integer (got {shown(value)})")
    if not math.isfinite(value):
        raise ConfigError(field, f"must be finite (got {shown(value)})")
    if not low <= value <= high:
        raise ConfigError(field, f"must be in [{low}, {high}] (got {shown(value)})")
    if positive and value <= 0:
        raise ConfigError(field, f"must be greater than 0, at most {high} (got {shown(value)})")
    return kind(value)


def section(section: str, data: Any, names: list[str]) -> dict[str, Any]:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(section, f"must be an object (got {shown(data)})")
    unknown = sorted(set(data) - set(names), key=str)
    if unknown:
        raise ConfigError(f"{section}.{unknown[0]}", f"unknown field; the fields are {', '.join(names)}")
    return data


def fields(section: str, data: dict[str, Any], spec: dict[str, tuple[Any, type, float, float]]) -> dict[str, Any]:
    return {name: number(f"{section}.{name}", data.get(name, default), kind, low, high)
            for name, (default, kind, low, high) in spec.items()}


def choice(field: str, value: Any, choices: tuple[str, ...] | list[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(field, f"must be one of {', '.join(choices)} (got {shown(value)})")
    return value


def check_pool(value: Any) -> str:
    if not isinstance(value, str) or not POOL.match(value):
        raise ConfigError("pool", f"must be {POOL_RULE} (got {shown(value)})")
    return value
