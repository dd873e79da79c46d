"""How a gang's ranks compress the gradients they exchange: ``evaluation.compression``, one registry by name.

- ``none`` (the default): dense AllReduce, what ``DistributedDataParallel`` does by itself;
- ``{"kind": "segment_topk", "ratio": 0.01}``: seed 003's segment-balanced sparsified AllReduce with error
  feedback (:mod:`evaluators.sparse_allreduce`): the same share ``ratio`` of each segment's largest gradients sent;
- ``{"kind": "powersgd", "rank": 2}`` and ``fp16``: PyTorch's own DDP communication hooks (``powerSGD_hook``,
  ``fp16_compress_hook``), as baselines.

A gang of one device exchanges nothing, whatever this says. Imports no torch: the configuration checker of the
web process reads it; the hooks themselves are registered by :mod:`evaluators.comm_hooks` in the ranks.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

#: Every kind, with its one parameter (name, default) when it has one.
KINDS: dict[str, tuple[str, float | int] | None] = {
    "none": None,
    "segment_topk": ("ratio", 0.01),
    "powersgd": ("rank", 2),
    "fp16": None,
}


@dataclasses.dataclass(frozen=True)
class Compression:
    """A checked ``evaluation.compression``: its ``kind`` and, for the kinds that have one, its parameter."""

    kind: str = "none"
    ratio: float | None = None  #: segment_topk: the share of each segment's gradients sent, in (0, 1]
    rank: int | None = None  #: powersgd: the rank of the low-rank approximation

    def to_config(self) -> str | dict[str, Any]:
        """What the configuration holds: the bare name when the kind has no parameter."""
        parameter = KINDS[self.kind]
        if parameter is None:
            return self.kind
        return {"kind": self.kind, parameter[0]: getattr(self, parameter[0])}


def parse_compression(value: Any) -> Compression:
    """``value`` (a name, or ``{"kind": ..., parameter}``; ``None`` is ``none``) checked; ``ValueError`` saying
    what is wrong and what is allowed."""
    if value is None:
        return Compression()
    if isinstance(value, str):
        value = {"kind": value}
    if not isinstance(value, dict):
        raise ValueError(f"must be a name ({', '.join(KINDS)}) or an object with a kind (got {value!r})")
    kind = value.get("kind")
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; the kinds are {', '.join(KINDS)}")
    parameter = KINDS[kind]
    allowed = {"kind"} | ({parameter[0]} if parameter else set())
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ValueError(f"{kind} takes {', '.join(sorted(allowed))} only (got {', '.join(unknown)})")
    if parameter is None:
        return Compression(kind)
    name, default = parameter
    given = value.get(name, default)
    number = isinstance(given, (int, float)) and not isinstance(given, bool) and math.isfinite(given)
    if name == "ratio":
        if not number or not 0 < given <= 1:
            raise ValueError(f"ratio must be a number in (0, 1], the share of gradients sent (got {given!r})")
        return Compression(kind, ratio=float(given))
    if not number or not float(given).is_integer() or given < 1:
        raise ValueError(f"rank must be a positive integer (got {given!r})")
    return Compression(kind, rank=int(given))


def from_text(text: str) -> str | dict[str, Any]:
    """A form's short spelling (``segment_topk:0.01``, ``powersgd:2``, ``fp16``, blank for ``none``) as the
    configuration's value (checked by :func:`parse_compression` afterwards); ``ValueError`` when not a number."""
    kind, _, given = (text or "none").strip().partition(":")
    parameter = KINDS.get(kind.strip())
    if not given.strip() or parameter is None:
        return kind.strip()
    try:
        number = float(given)
    except ValueError:
        raise ValueError(f"{given.strip()!r} is not a number: write kind:number, such as segment_topk:0.01") from None
    return {"kind": kind.strip(), parameter[0]: int(number) if number.is_integer() and parameter[0] == "rank"
            else number}


def to_text(value: Any) -> str:
    """What :func:`from_text` reads back for a stored ``evaluation.compression``."""
    config = parse_compression(value).to_config()
    if isinstance(config, str):
        return config
    name = KINDS[config["kind"]][0]
    return f"{config['kind']}:{config[name]:g}"
