"""The configuration of gangs: ``evaluation.devices`` (``auto``, the default: the allocator decides per
candidate; or a number: that many devices each, on workers started with ``--gang``) and, for simulated
evaluations, ``evaluation.efficiency`` (``T(g) = T(1) / (g x efficiency(g))``, see ``nas.allocation``)."""
from __future__ import annotations

from typing import Any

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


def check_gang_fields(data: dict[str, Any], simulated: bool) -> dict[str, Any]:
    """The checked gang fields of an evaluation section; ``ValueError`` with the reason (the caller names the
    field in its ``ConfigError``)."""
    # absent stays absent (the workers read it as auto): configurations written before gangs check the same
    checked: dict[str, Any] = {} if "devices" not in data else {"devices": check_devices(data["devices"])}
    if simulated and data.get("efficiency") is not None:
        checked["efficiency"] = check_efficiency(data["efficiency"], "evaluation.efficiency")
    return checked
