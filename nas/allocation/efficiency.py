"""How well one evaluation scales over a gang of devices, and which gang sizes a worker may use.

An evaluation that takes ``T(1)`` seconds on one device takes ``T(g) = T(1) / (g x efficiency(g))`` on a gang of
``g`` devices (data parallel, same global batch). ``efficiency(1) = 1``; below 1 for larger gangs, because the
gradient AllReduce and the smaller per-device batch cost time (seed 003, Table II: 16 one-GPU evaluators 15.2x,
one 16-GPU evaluator 13.9x). The simulated evaluator and the allocator's prior both use this curve.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

#: Efficiency kept per doubling of the gang when nothing is measured or configured (0.92: a gang of 16 keeps
#: 0.92^4 = 0.72 of its devices' time, between seed 003's 13.9/16 for an evaluator and 6.1/16 for a parameter server).
DEFAULT_PER_DOUBLING = 0.92

EfficiencySpec = float | Mapping[str, float] | Mapping[int, float] | None


def check_efficiency(spec: Any, field: str = "efficiency") -> EfficiencySpec:
    """``spec`` if it is a valid efficiency curve, else ``ValueError`` naming ``field``.

    A number in (0, 1]: the efficiency kept per doubling of the gang (``efficiency(g) = spec ** log2(g)``).
    A mapping from gang size (int or its string) to an efficiency in (0, 1]: sizes in between are interpolated
    per doubling from the nearest smaller size given (size 1 is always 1).
    """
    if spec is None:
        return None
    if isinstance(spec, bool):
        raise ValueError(f"`{field}` must be a number in (0, 1] or a mapping gang size -> efficiency (got {spec!r})")
    if isinstance(spec, (int, float)):
        if not 0 < float(spec) <= 1:
            raise ValueError(f"`{field}` must be in (0, 1] (got {spec!r})")
        return float(spec)
    if isinstance(spec, Mapping):
        for size, value in spec.items():
            try:
                number = int(size)
            except (TypeError, ValueError):
                raise ValueError(f"`{field}` keys must be gang sizes (got {size!r})") from None
            if number < 1:
                raise ValueError(f"`{field}` keys must be gang sizes of at least 1 (got {size!r})")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < float(value) <= 1:
                raise ValueError(f"`{field}[{size}]` must be a number in (0, 1] (got {value!r})")
        return {str(int(k)): float(v) for k, v in spec.items()}
    raise ValueError(f"`{field}` must be a number in (0, 1] or a mapping gang size -> efficiency (got {spec!r})")


def efficiency(gang: int, spec: EfficiencySpec = None) -> float:
    """The parallel efficiency of a gang of ``gang`` devices under ``spec`` (see :func:`check_efficiency`)."""
    if gang < 1:
        raise ValueError(f"a gang has at least 1 device (gang={gang})")
    if gang == 1:
        return 1.0
    if spec is None:
        spec = DEFAULT_PER_DOUBLING
    if isinstance(spec, (int, float)):
        return float(spec) ** math.log2(gang)
    table = {int(k): float(v) for k, v in spec.items()}
    table[1] = 1.0
    if gang in table:
        return table[gang]
    below = max(size for size in table if size < gang)
    above = [size for size in table if size > gang]
    if not above:  # beyond the largest size given: keep losing, per doubling, what it lost on average
        if below == 1:
            return 1.0
        per_doubling = table[below] ** (1 / math.log2(below))
        return table[below] * per_doubling ** math.log2(gang / below)
    upper = min(above)
    # geometric interpolation in log2(gang): a size between two given ones scales between them
    fraction = math.log2(gang / below) / math.log2(upper / below)
    return table[below] * (table[upper] / table[below]) ** fraction


def gang_duration(single: float, gang: int, spec: EfficiencySpec = None) -> float:
    """``T(g) = T(1) / (g x efficiency(g))``: the time a ``single``-device evaluation takes on ``gang`` devices."""
    return single / (gang * efficiency(gang, spec))


def gang_sizes(devices: int, gang: int | str = "auto") -> tuple[int, ...]:
    """The gang sizes a worker owning ``devices`` devices may run: every size that splits them into equal gangs
    (``auto``), or the one fixed size. ``ValueError`` with a one-line message otherwise."""
    if devices < 1:
        raise ValueError(f"a worker needs at least one device (got {devices})")
    divisors = tuple(size for size in range(1, devices + 1) if devices % size == 0)
    if gang == "auto":
        return divisors
    if isinstance(gang, str):
        try:
            gang = int(gang)
        except ValueError:
            raise ValueError(f"--gang must be auto or a number of devices (got {gang!r})") from None
    if gang < 1:
        raise ValueError(f"--gang must be at least 1 (got {gang})")
    if gang > devices:
        raise ValueError(f"--gang {gang} is larger than the {devices} device(s) this worker owns")
    if devices % gang:
        allowed = ", ".join(str(size) for size in divisors)
        raise ValueError(f"--gang {gang} does not split {devices} devices into equal gangs (choose {allowed} or auto)")
    return (gang,)
