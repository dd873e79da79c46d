"""The packet of seed 000 (Table 2): the message between the EA server and its computing nodes.

Fields: ``operation_type`` (0 = a node's request for work, 1 = a node's reply with evaluated individuals, which
also asks for more), ``ind_len`` (how many individuals it carries), ``ind_set`` (the individuals) and
``termination_flag`` (true = evolution is over). The individuals are opaque JSON objects here: the engine puts
the candidate id, genome, space name and training budget in them, and the packet never looks inside.

The engine sends every evaluation task as a signed packet (``webapp.messaging.signing``), cuts work into
packets with :func:`split_packets` and sizes them with seed 000's :func:`adaptive_ind_len`.
"""
from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from typing import Any


#: ``operation_type`` of a node's request for work ("applying for new data").
REQUEST = 0
#: ``operation_type`` of a node's evaluated individuals ("replied processed data").
RESULTS = 1

_FIELDS = ("operation_type", "ind_len", "ind_set", "termination_flag")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class Packet:
    """One message; checked at construction, so a ``Packet`` always holds consistent fields."""

    operation_type: int
    ind_len: int
    ind_set: list
    termination_flag: bool = False

    def __post_init__(self) -> None:
        if not _is_int(self.operation_type) or self.operation_type not in (REQUEST, RESULTS):
            raise ValueError(
                f"`operation_type` must be {REQUEST} (request) or {RESULTS} (results) "
                f"(operation_type={self.operation_type!r})."
            )
        if not isinstance(self.ind_set, list) or not all(isinstance(ind, dict) for ind in self.ind_set):
            raise ValueError(f"`ind_set` must be a list of JSON objects (ind_set={self.ind_set!r}).")
        if not _is_int(self.ind_len) or self.ind_len != len(self.ind_set):
            raise ValueError(
                f"`ind_len` must equal the number of individuals in `ind_set` "
                f"(ind_len={self.ind_len!r}, len(ind_set)={len(self.ind_set)})."
            )
        if not isinstance(self.termination_flag, bool):
            raise ValueError(f"`termination_flag` must be a bool (termination_flag={self.termination_flag!r}).")

    def to_dict(self) -> dict[str, Any]:
        return {field: getattr(self, field) for field in _FIELDS}

    def to_json(self) -> str:
        """Compact JSON with the fields in Table 2's order."""
        return json.dumps(self.to_dict(), separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_dict(cls, data: Any) -> Packet:
        """Parse and check a packet read from JSON; anything but exactly the four fields with the right types is a
        ``ValueError``."""
        if not isinstance(data, dict):
            raise ValueError(f"A packet must be a JSON object with the fields {', '.join(_FIELDS)} (got {type(data).__name__}).")
        missing = [field for field in _FIELDS if field not in data]
        unknown = sorted(map(str, set(data) - set(_FIELDS)))
        if missing or unknown:
            raise ValueError(
                f"A packet has exactly the fields {', '.join(_FIELDS)} (missing={missing}, unknown={unknown[:10]})."
            )
        return cls(**data)

    def nbytes(self) -> int:
        """The length in bytes of the UTF-8 encoding of :meth:`to_json`, what crosses the wire."""
        return len(self.to_json().encode("utf-8"))


def adaptive_ind_len(
    pop_size: int, n_nodes: int, requests_so_far: int, start: int = 3, *, available: int | None = None
) -> int:
    """How many individuals to hand a node for its next request, by seed 000's batch-size rule.

    Seed 000: "ind_len ∈ [0, ⌈pop_size/n⌉]" and, in the experiment (pop_size = 20, n = 4), ind_len "was manually
    initialized to 3 and then decreases gradually to 1 as a computing node sends a new task request". So the
    node's first request gets ``start``, each later one one fewer, never below 1, and never above
    ``⌈pop_size / n_nodes⌉``. ``available``, when given, caps it by the individuals there are to hand out
    (0 means nothing now, which the paper allows).

    Args:
        pop_size: the population size.
        n_nodes: the number of computing nodes.
        requests_so_far: how many requests this node made before this one (0 for its first).
        start: the size of the first batch.
        available: the unevaluated individuals waiting to be sent, if known.
    """
    lows = {
        "pop_size": (pop_size, 0), "n_nodes": (n_nodes, 1), "requests_so_far": (requests_so_far, 0), "start": (start, 1),
    }
    for name, (value, low) in lows.items():
        if not _is_int(value) or value < low:
            raise ValueError(f"`{name}` must be an integer >= {low} ({name}={value!r}).")
    if available is not None and (not _is_int(available) or available < 0):
        raise ValueError(f"`available` must be None or an integer >= 0 (available={available!r}).")
    size = min(max(start - requests_so_far, 1), math.ceil(pop_size / n_nodes))
    return size if available is None else min(size, available)


def split_packets(items: Sequence[Any], free_slots: int, ind_len: int) -> list[list[Any]]:
    """``items`` cut into packets for ``free_slots`` idle slots: at most ``ind_len`` each, and at least one packet
    per free slot while there are items (17 items for 16 slots are 1 packet of 2 and 15 of 1, not 9 of 2 that
    would leave 7 slots idle). Sizes differ by at most one; order is kept."""
    if not _is_int(free_slots) or free_slots < 1 or not _is_int(ind_len) or ind_len < 1:
        raise ValueError(f"`free_slots` and `ind_len` must be integers >= 1 (free_slots={free_slots!r}, ind_len={ind_len!r}).")
    if not items:
        return []
    count = max(min(len(items), free_slots), math.ceil(len(items) / ind_len))
    base, extra = divmod(len(items), count)
    packets, start = [], 0
    for index in range(count):
        size = base + (1 if index < extra else 0)
        packets.append(list(items[start : start + size]))
        start += size
    return packets
