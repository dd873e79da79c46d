"""The configuration of gangs: ``evaluation.devices`` (``auto``, the default: the allocator decides per
candidate; or a number: that many devices each, on workers started with ``--gang``) and, for simulated
evaluations, ``evaluation.efficiency`` (``T(g) = T(1) / (g x efficiency(g))``, see ``nas.allocation``); for trained
ones, ``evaluation.compression``: how a gang's ranks exchange gradients (``evaluators.compression``)."""
from __future__ import annotations

from typing import Any

from evaluators.compression import parse_compression
from nas.allocation import check_efficiency

#: The most devices one evaluation may ask for (one host's).
MAX_DEVICES = 64


def check_devices(value: Any) -> str | int:
    """``auto`` or a number of devices in 1..MAX_DEVICES; ``ValueError`` naming ``evaluation.devices``."""
    if value == "auto":
        return "auto"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer() \
            or not 1 <= value <= MAX_DEVICES:
        raise ValueError(f"must be auto or a number of devices from 1 to {MAX_DEVICES} (got {value!r})")
    return int(value)


def check_compression(value: Any) -> str | dict[str, Any]:
    """``none``, ``fp16``, ``{"kind": "segment_topk", "ratio": r}`` or ``{"kind": "powersgd", "rank": r}``, as
    stored; ``ValueError`` whose message starts with ``evaluation.compression``."""
    try:
        return parse_compression(value).to_config()
    except ValueError as error:
        raise ValueError(f"evaluation.compression {error}") from None


def check_gang_fields(data: dict[str, Any], simulated: bool) -> dict[str, Any]:
    """The checked gang fields of an evaluation section; ``ValueError`` with the reason (the caller names the
    field in its ``ConfigError``)."""
    # absent stays absent (the workers read it as auto): configurations written before gangs check the same
    checked: dict[str, Any] = {} if "devices" not in data else {"devices": check_devices(data["devices"])}
    if not simulated and data.get("compression") is not None:  # absent stays absent: dense
        checked["compression"] = check_compression(data["compression"])
    if simulated and data.get("efficiency") is not None:
        checked["efficiency"] = check_efficiency(data["efficiency"], "evaluation.efficiency")
    return checked
