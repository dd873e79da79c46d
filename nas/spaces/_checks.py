"""Checks shared by the spaces: genome fields raise :class:`GenomeError`, constructor parameters ``ValueError``.

Field paths name list items as ``[i]`` and dict keys as ``.key`` (``stages[2][1]``, ``layers[3].kernel``); the
genome itself is ``genome``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nas.spaces.base import GenomeError


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


#: The value shown in a :class:`GenomeError` for a required key that is absent.
MISSING = _Missing()


def key_path(field: str, key: Any) -> str:
    """The path of ``key`` inside the dict at ``field`` (top level: just the key)."""
    return f"{field}.{key}" if field else str(key)


def show(values: Sequence[Any]) -> str:
    """``1, 2`` or ``'none', 'skip_connect'``: a choice list as a message shows it."""
    return ", ".join(repr(value) for value in values)


def is_int(value: Any) -> bool:
    """True for Python integers, false for bools (``True == 1``, but a bool is not a gene value)."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_dict(value: Any, field: str, keys: Sequence[str]) -> dict:
    """``value`` if it is a dict with exactly ``keys``."""
    if not isinstance(value, dict):
        raise GenomeError(field or "genome", value, f"a dict with the keys {show(keys)}")
    for key in keys:
        if key not in value:
            raise GenomeError(key_path(field, key), MISSING, f"the key {key!r} to be present (keys: {show(keys)})")
    for key in value:
        if key not in keys:
            raise GenomeError(key_path(field, key), value[key], f"only the keys {show(keys)}")
    return value


def check_list(value: Any, field: str, low: int, high: int, what: str) -> list:
    """``value`` if it is a list of ``low`` to ``high`` items; ``what`` describes one item."""
    count = f"{low}" if low == high else f"{low} to {high}"
    if not isinstance(value, list) or not low <= len(value) <= high:
        size = f" (got {len(value)})" if isinstance(value, list) else ""
        raise GenomeError(field, value, f"a list of {count} {what}{size}")
    return value


def check_int(value: Any, field: str, low: int, high: int) -> int:
    """``value`` if it is an integer in ``[low, high]``."""
    if not is_int(value) or not low <= value <= high:
        raise GenomeError(field, value, f"an integer in [{low}, {high}]")
    return value


def check_choice(value: Any, field: str, choices: Sequence[Any]) -> Any:
    """``value`` if it is one of ``choices`` and of the same type (so ``True`` is not ``1``)."""
    if not any(type(value) is type(choice) and value == choice for choice in choices):
        raise GenomeError(field, value, f"one of {show(choices)}")
    return value


#: Upper bounds of the spaces' size parameters: a search space is for networks that train in minutes to hours,
#: and a bound keeps one bad request from building a network that fills the memory of every worker it reaches.
MAX_LAYERS = 64
MAX_MODULES = 16
MAX_CHANNELS = 1024


def check_int_param(name: str, value: Any, low: int = 1, high: int | None = None) -> int:
    """A constructor parameter that must be an integer in ``[low, high]``."""
    if is_int(value) and high is not None and value > high:
        raise ValueError(f"`{name}` must be an integer <= {high} ({name}={value!r}).")
    if not is_int(value) or value < low:
        raise ValueError(f"`{name}` must be an integer >= {low} ({name}={value!r}).")
    return value


def check_values_param(name: str, values: Any, allowed: Sequence[int] | None = None, high: int = MAX_CHANNELS) -> list[int]:
    """A constructor parameter listing distinct integers in ``[1, high]`` (from ``allowed`` if given), sorted."""
    if (
        not isinstance(values, (list, tuple))
        or not values
        or len(values) > high
        or not all(is_int(v) and 0 < v <= high for v in values)
        or len(set(values)) != len(values)
    ):
        raise ValueError(f"`{name}` must be a non-empty list of distinct integers in [1, {high}] ({name}={values!r}).")
    if allowed is not None and not set(values) <= set(allowed):
        raise ValueError(f"`{name}` may only contain {show(allowed)} ({name}={values!r}).")
    return sorted(values)


def check_range_param(name: str, pair: Any, most: int = MAX_LAYERS) -> list[int]:
    """A constructor parameter ``[low, high]`` of integers with ``1 <= low <= high <= most``."""
    well_formed = isinstance(pair, (list, tuple)) and len(pair) == 2 and all(is_int(v) for v in pair)
    if not well_formed or not 1 <= pair[0] <= pair[1] <= most:
        raise ValueError(f"`{name}` must be a pair [low, high] of integers with 1 <= low <= high <= {most} "
                         f"({name}={pair!r}).")
    return [pair[0], pair[1]]


def check_rate_param(name: str, value: Any) -> float | None:
    """A constructor parameter that is ``None`` (the default rule) or a probability in ``(0, 1]``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value <= 1.0:
        raise ValueError(f"`{name}` must be None or a probability in (0, 1] ({name}={value!r}).")
    return float(value)
