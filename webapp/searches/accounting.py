"""Live accounting of a search, updated as each result is recorded (no recomputation per page view).

The control loop's recording changes ``Search.stats`` only through the ``count_*``, ``*_period`` and
``add_slot_time`` functions here; the pages read it through :func:`summary`. Both processes import this module:
it is plain data in, plain data out.

``stats`` is plain JSON kept in the search row: per node (``node/device``) and per slot the evaluations, the
failures and the busy seconds; the serial time (sum of evaluation durations); the periods the search was
running (a stopped search's pause is not one); the slot-seconds the search could use while it ran (slots of
its pool that were idle or working for it, sampled by its loop: a slot busy with another search is not this
search's to use); the bytes of the packets sent and of the results received. :func:`summary` derives the
figures the dashboard shows:

- wall: the time the search was running;
- speedup: serial time / wall;
- held: the slots it could use, on average over its running time (slot-seconds / wall): the ideal speedup;
- efficiency: speedup / held (= serial time / slot-seconds);
- ideal: how many slots took work (an integer, for the per-node tables).
"""
from __future__ import annotations

from typing import Any

#: A loop that was silent longer than this (it died; a reaper restarted it) did not sample: the gap counts once.
MAX_SAMPLE_GAP = 5.0
#: How many points of the speedup history a search keeps (thinned evenly past it).
HISTORY = 512


def new_stats(now: float) -> dict[str, Any]:
    return {"first_dispatch": now, "last_finish": None, "serial": 0.0, "done": 0, "failed": 0, "nodes": {},
            "slots": {}, "bytes_sent": 0, "bytes_received": 0, "packets": 0, "resent": 0,
            "periods": [[now, None]], "slot_seconds": 0.0, "history": []}


def start_period(stats: dict[str, Any], now: float) -> None:
    """The search runs (again) from ``now``; nothing changes if it is running already (a loop restarted)."""
    periods = stats.setdefault("periods", [])
    if not periods or periods[-1][1] is not None:
        periods.append([now, None])


def end_period(stats: dict[str, Any], now: float) -> None:
    """The search stopped or finished at ``now``."""
    periods = stats.get("periods") or []
    if periods and periods[-1][1] is None:
        periods[-1][1] = max(now, periods[-1][0])


def add_slot_time(stats: dict[str, Any], slot_seconds: float) -> None:
    """Slot-seconds the search could use (its loop samples them, see ``SlotClock``)."""
    stats["slot_seconds"] = stats.get("slot_seconds", 0.0) + slot_seconds


def running_time(stats: dict[str, Any], end: float) -> float:
    """Seconds the search was running up to ``end`` (its first dispatch to ``end`` for stats older than periods)."""
    periods = stats.get("periods")
    if not periods:
        return max(end - stats["first_dispatch"], 0.0)
    return sum(max(min(stop if stop is not None else end, end) - start, 0.0) for start, stop in periods)


class SlotClock:
    """A loop's sampler of the slots its search could use: each sample adds ``available x elapsed``, elapsed
    capped at :data:`MAX_SAMPLE_GAP`; :meth:`take` hands over what was added since the last take."""

    def __init__(self, now: float) -> None:
        self.last = now
        self.pending = 0.0

    def sample(self, now: float, available: int) -> None:
        self.pending += available * min(max(now - self.last, 0.0), MAX_SAMPLE_GAP)
        self.last = now

    def take(self) -> float:
        pending, self.pending = self.pending, 0.0
        return pending


def add_device_time(stats: dict[str, Any], device_seconds: float) -> None:
    """Add device-seconds the search could use (a gang worker's slot weighs its share of the devices)."""
    stats["device_seconds"] = stats.get("device_seconds", 0.0) + device_seconds


def count_packet(stats: dict[str, Any], nbytes: int, resent: int = 0) -> None:
    """One packet of ``nbytes`` sent; ``resent`` of its individuals had been sent before."""
    stats["packets"] += 1
    stats["bytes_sent"] += nbytes
    stats["resent"] = stats.get("resent", 0) + resent


def count_result(stats: dict[str, Any], *, node: str, device: str, slot: str, ok: bool, duration: float,
                 finished: float, nbytes: int, devices: float = 1.0) -> None:
    """Add one recorded result (``devices``: how many it held, a gang's size; a slot counts as one)."""
    stats["done" if ok else "failed"] += 1
    stats["serial"] += duration
    stats["device_busy"] = stats.get("device_busy", 0.0) + devices * duration
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
    history = stats.setdefault("history", [])
    history.append([finished, running_time(stats, finished), stats["serial"], stats.get("slot_seconds", 0.0), len(stats["slots"])])
    if len(history) > HISTORY:  # keep every other point: the curve's shape stays, its size is bounded
        stats["history"] = history[::2]


def summary(stats: dict[str, Any], now: float | None = None) -> dict[str, Any]:
    """Running time, speedup, slots held, efficiency and per-node throughput (evaluations per hour)."""
    if not stats or stats.get("first_dispatch") is None:
        return {"wall": 0.0, "serial": 0.0, "speedup": 0.0, "ideal": 0, "held": 0.0, "efficiency": 0.0, "nodes": []}
    end = stats["last_finish"] if now is None else max(now, stats["last_finish"] or now)
    wall = max(running_time(stats, end or stats["first_dispatch"]), 1e-9)
    ideal = len(stats["slots"])
    speedup = stats["serial"] / wall
    held = stats.get("slot_seconds", 0.0) / wall if "periods" in stats else float(ideal)
    nodes = [
        {**entry, "slots": len(entry["slots"]), "throughput_per_hour": entry["count"] * 3600.0 / wall}
        for entry in sorted(stats["nodes"].values(), key=lambda e: (e["node"], e["device"]))
    ]
    return {
        "wall": wall, "serial": stats["serial"], "speedup": speedup, "ideal": ideal, "held": held,
        "efficiency": min(speedup / held, 1.0) if held > 0 else 0.0, "nodes": nodes, "done": stats["done"],
        "failed": stats["failed"], "packets": stats["packets"], "bytes_sent": stats["bytes_sent"],
        "bytes_received": stats["bytes_received"], "resent": stats.get("resent", 0),
        # device-seconds busy / device-seconds available (gangs: seed 003); None before it is measured
        "utilisation": (min(stats.get("device_busy", 0.0) / stats["device_seconds"], 1.0)
                        if stats.get("device_seconds") else None),
    }


def history(stats: dict[str, Any]) -> list[dict[str, float]]:
    """Speedup, slots held and efficiency after each recorded result (thinned past :data:`HISTORY` points), by
    the definitions of :func:`summary`."""
    points = []
    for finished, wall, serial, slot_seconds, slots in stats.get("history") or []:
        wall = max(wall, 1e-9)
        held = slot_seconds / wall
        speedup = serial / wall
        points.append({"time": finished, "speedup": speedup, "ideal": slots, "held": held,
                       "efficiency": min(speedup / held, 1.0) if held > 0 else 0.0})
    return points
