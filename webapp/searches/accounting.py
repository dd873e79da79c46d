"""Live accounting of a search, updated as each result is recorded (no recomputation per page view).

The control loop's recording changes ``Search.stats`` only through the ``count_*``, ``*_period`` and
``add_slot_time`` functions here; the pages read it through :func:`summary`. Both processes import this module:
it is plain data in, plain data out.

``stats`` is plain JSON kept in the search row: per node (``node/device``) and per slot the evaluations, the
failures and the busy seconds; the serial time (sum of evaluation durations); the periods the search was
running (a stopped search's pause is not one); the slot-seconds the search could use while it ran (slots of
its pool that were idle or working for it, sampled by its loop: a slot busy with another search is not this
search's to use); the bytes of the packets sent and of the results received. :func:`summary` derives the
figures the dashboard shows, all of them through :func:`figures` (the page's line, its chart, the API and
``search watch`` read the same numbers):

- wall: the time the search was running;
- running serial time: the seconds of its evaluations that fell while it was running (an evaluation finished
  after a Stop, during ``stopping``, counts up to the stop: the wall does not count that time either);
- usable: the slot-seconds it could use, and at least its running serial time (a slot working for the search
  was usable by it, sampled or not: before the loop's first sample, between samples);
- speedup: running serial time / wall;
- held: usable / wall, the slots it could use on average while it ran: the ideal speedup;
- efficiency: speedup / held (= running serial time / usable), so 0 <= efficiency <= 1 and speedup <= held
  always;
- ideal: how many slots took work (an integer, for the per-node tables).

Before its first result (or before :data:`MIN_WALL` of running time) speedup, held, efficiency and the
throughputs are ``None`` and ``waiting`` says what they wait for; nothing is ever divided by a stand-in for zero.
``serial`` stays the plain sum of the durations (the benchmarks' T_1).
"""
from __future__ import annotations

from typing import Any

#: A loop that was silent longer than this (it died; a reaper restarted it) did not sample: the gap counts once.
MAX_SAMPLE_GAP = 5.0
#: How many points of the speedup history a search keeps (thinned evenly past it).
HISTORY = 512
#: Less running time than this is no basis for a rate (speedup, throughput): seconds.
MIN_WALL = 1e-3


def new_stats(now: float) -> dict[str, Any]:
    return {"first_dispatch": now, "last_finish": None, "serial": 0.0, "serial_running": 0.0, "done": 0, "failed": 0,
            "nodes": {}, "slots": {}, "bytes_sent": 0, "bytes_received": 0, "packets": 0, "resent": 0,
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


def add_slot_time(stats: dict[str, Any], slot_seconds: float, as_of: float | None = None) -> None:
    """Slot-seconds the search could use (its loop samples them, see ``SlotClock``), sampled up to ``as_of``."""
    stats["slot_seconds"] = stats.get("slot_seconds", 0.0) + slot_seconds
    if as_of is not None:
        stats["as_of"] = max(stats.get("as_of") or as_of, as_of)


def running_time(stats: dict[str, Any], end: float) -> float:
    """Seconds the search was running up to ``end`` (its first dispatch to ``end`` for stats older than periods)."""
    periods = stats.get("periods")
    if not periods:
        return max(end - stats["first_dispatch"], 0.0)
    return sum(max(min(stop if stop is not None else end, end) - start, 0.0) for start, stop in periods)


def _while_running(stats: dict[str, Any], start: float, end: float) -> float:
    """The seconds of ``[start, end]`` that fell in the search's running periods (all of it for old stats)."""
    periods = stats.get("periods")
    if not periods:
        return max(end - start, 0.0)
    return sum(max(min(end, stop if stop is not None else end) - max(start, begin), 0.0) for begin, stop in periods)


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
    stats.setdefault("serial_running", stats["serial"])  # stats of before it was kept: their serial time
    stats["serial"] += duration
    stats["serial_running"] += _while_running(stats, finished - duration, finished)
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
    history.append([finished, running_time(stats, finished), stats["serial_running"], stats.get("slot_seconds", 0.0),
                    len(stats["slots"])])
    if len(history) > HISTORY:  # keep every other point: the curve's shape stays, its size is bounded
        stats["history"] = history[::2]


WAITING_RESULT = "the first result"
WAITING_SLOT = "a slot to run on"
WAITING_TIME = "running time"


def figures(wall: float, serial: float, slot_seconds: float, results: int) -> dict[str, Any]:
    """Speedup, held (the ideal) and efficiency from the running time, the serial time and the slot-seconds the
    loop sampled, after ``results`` results: the one definition every page, chart and line reads."""
    if results <= 0 or wall < MIN_WALL:
        return {"speedup": None, "held": None, "efficiency": None,
                "waiting": WAITING_RESULT if results <= 0 else WAITING_TIME}
    usable = max(slot_seconds, serial)  # its own evaluations ran on slots it could use
    return {"speedup": serial / wall, "held": usable / wall,
            "efficiency": serial / usable if usable > 0 else None,
            "waiting": None if usable > 0 else WAITING_SLOT}


def _end(stats: dict[str, Any], now: float | None) -> float:
    """The moment the figures are taken at: ``now``, else the last the stats know of (a result, a sample)."""
    if now is not None:
        return max(now, stats.get("last_finish") or now)
    known = [t for t in (stats.get("last_finish"), stats.get("as_of")) if t is not None]
    periods = stats.get("periods") or []
    if periods and periods[-1][1] is not None:
        known.append(periods[-1][1])
    return max(known, default=stats["first_dispatch"])


def summary(stats: dict[str, Any], now: float | None = None) -> dict[str, Any]:
    """Running time, speedup, slots held, efficiency (:func:`figures`) and per-node throughput (evaluations per
    hour; ``None`` before any running time)."""
    if not stats or stats.get("first_dispatch") is None:
        return {"wall": 0.0, "serial": 0.0, **figures(0.0, 0.0, 0.0, 0), "ideal": 0, "nodes": [], "done": 0,
                "failed": 0, "packets": 0, "bytes_sent": 0, "bytes_received": 0, "resent": 0, "utilisation": None}
    end = _end(stats, now)
    wall = running_time(stats, end)
    ideal = len(stats["slots"])
    slot_seconds = stats.get("slot_seconds", 0.0) if "periods" in stats else ideal * wall
    nodes = [
        {**entry, "slots": len(entry["slots"]),
         "throughput_per_hour": entry["count"] * 3600.0 / wall if wall >= MIN_WALL else None}
        for entry in sorted(stats["nodes"].values(), key=lambda e: (e["node"], e["device"]))
    ]
    return {
        "wall": wall, "serial": stats["serial"], "ideal": ideal, "as_of": end,
        **figures(wall, stats.get("serial_running", stats["serial"]), slot_seconds, stats["done"] + stats["failed"]),
        "nodes": nodes, "done": stats["done"],
        "failed": stats["failed"], "packets": stats["packets"], "bytes_sent": stats["bytes_sent"],
        "bytes_received": stats["bytes_received"], "resent": stats.get("resent", 0),
        # device-seconds busy / device-seconds available (gangs: seed 003); None before it is measured
        "utilisation": (min(stats.get("device_busy", 0.0) / stats["device_seconds"], 1.0)
                        if stats.get("device_seconds") else None),
    }


def history(stats: dict[str, Any], now: float | None = None) -> list[dict[str, Any]]:
    """Speedup, slots held and efficiency after each recorded result (thinned past :data:`HISTORY` points), by
    :func:`figures`, ending with :func:`summary`'s own point: the chart's last point is the line's."""
    points = []
    for finished, wall, serial, slot_seconds, slots in stats.get("history") or []:
        point = figures(wall, serial, slot_seconds, 1)  # a point of the history follows a result
        if point["speedup"] is not None:
            points.append({"time": finished, "ideal": slots, **point})
    if stats and stats.get("first_dispatch") is not None:
        last = summary(stats, now)
        if last["speedup"] is not None and (not points or last["as_of"] > points[-1]["time"]):
            points.append({"time": last["as_of"], "ideal": last["ideal"],
                           **{key: last[key] for key in ("speedup", "held", "efficiency", "waiting")}})
        elif last["speedup"] is not None:  # taken at the last result's moment: the same numbers
            points[-1].update({key: last[key] for key in ("speedup", "held", "efficiency", "waiting")})
    return points
