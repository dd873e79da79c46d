"""Live accounting of a search, updated as each result is recorded (no recomputation per page view).

The control loop's recording changes ``Search.stats`` only through the ``count_*`` functions here; the pages
read it through :func:`summary`. Both processes import this module: it is plain data in, plain data out.

``stats`` is plain JSON kept in the search row: per node (``node/device``) and per slot the evaluations, the
failures and the busy seconds; the serial time (sum of evaluation durations); the first dispatch and last
finish; the bytes of the packets sent and of the results received. :func:`summary` derives the figures the
dashboard shows: wall time, speedup = serial / wall, ideal = slots that took work, efficiency = speedup / ideal.
"""
from __future__ import annotations

from typing import Any


def new_stats(now: float) -> dict[str, Any]:
    return {"first_dispatch": now, "last_finish": None, "serial": 0.0, "done": 0, "failed": 0, "nodes": {},
            "slots": {}, "bytes_sent": 0, "bytes_received": 0, "packets": 0, "resent": 0}


def count_packet(stats: dict[str, Any], nbytes: int, resent: int = 0) -> None:
    """One packet of ``nbytes`` sent; ``resent`` of its individuals had been sent before."""
    stats["packets"] += 1
    stats["bytes_sent"] += nbytes
    stats["resent"] = stats.get("resent", 0) + resent


def count_result(stats: dict[str, Any], *, node: str, device: str, slot: str, ok: bool, duration: float,
                 finished: float, nbytes: int) -> None:
    """Add one recorded result."""
    stats["done" if ok else "failed"] += 1
    stats["serial"] += duration
    stats["bytes_received"] += nbytes
    stats["last_finish"] = max(stats["last_finish"] or finished, finished)
    name = f"{node}/{device}"
    entry = stats["nodes"].setdefault(name, {"node": node, "device": device, "count": 0, "failed": 0, "busy": 0.0, "slots": []})
    entry["count"] += 1
    entry["failed"] += 0 if ok else 1
    entry["busy"] += duration
    if slot and slot not in entry["slots"]:
        entry["slots"].append(slot)
    per_slot = stats["slots"].setdefault(slot, {"count": 0, "busy": 0.0})
    per_slot["count"] += 1
    per_slot["busy"] += duration


def summary(stats: dict[str, Any], now: float | None = None) -> dict[str, Any]:
    """Wall time, speedup, ideal, efficiency and per-node throughput (evaluations per hour)."""
    if not stats or stats.get("first_dispatch") is None:
        return {"wall": 0.0, "serial": 0.0, "speedup": 0.0, "ideal": 0, "efficiency": 0.0, "nodes": []}
    end = stats["last_finish"] if now is None else max(now, stats["last_finish"] or now)
    wall = max((end or stats["first_dispatch"]) - stats["first_dispatch"], 1e-9)
    ideal = len(stats["slots"])
    speedup = stats["serial"] / wall
    nodes = [
        {**entry, "slots": len(entry["slots"]), "throughput_per_hour": entry["count"] * 3600.0 / wall}
        for entry in sorted(stats["nodes"].values(), key=lambda e: (e["node"], e["device"]))
    ]
    return {
        "wall": wall, "serial": stats["serial"], "speedup": speedup, "ideal": ideal,
        "efficiency": speedup / ideal if ideal else 0.0, "nodes": nodes, "done": stats["done"],
        "failed": stats["failed"], "packets": stats["packets"], "bytes_sent": stats["bytes_sent"],
        "bytes_received": stats["bytes_received"], "resent": stats.get("resent", 0),
    }
