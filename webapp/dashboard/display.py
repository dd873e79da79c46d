"""How numbers, durations and dates read on the pages: each metric with the precision it means (an accuracy
to four decimals, a parameter count with thousands separators, a time to three significant digits), never
the sixteen digits a float prints."""
from __future__ import annotations

import datetime as dt
import math
from typing import Any

DASH = "—"
#: Metric names (or name parts) read as fractions: shown to four decimals.
FRACTIONS = ("accuracy", "fitness", "efficiency")


def significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, never in exponent notation, thousands separated
    (``0.000123``, ``1.23``, ``12,346``)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:,.{min(decimals, 9)}f}"


def size(nbytes: float) -> str:
    """A byte count in the largest unit that keeps it at least 1 (``1.5 MB``)."""
    for unit in ("B", "kB", "MB", "GB"):
        if abs(nbytes) < 1000 or unit == "GB":
            return f"{significant(nbytes, 3)} {unit}"
        nbytes /= 1000
    return f"{nbytes} GB"  # not reached


def metric(name: str, value: Any) -> str:
    """One metric of an individual, as the individual page shows it."""
    if value is None or value == "":
        return DASH
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if name.endswith("_bytes"):
        return size(value)
    if any(part in name for part in FRACTIONS):
        return f"{value:.4f}"
    if isinstance(value, int) or value.is_integer() and abs(value) >= 1:
        return f"{int(value):,}"
    if name.endswith("_ms"):
        return f"{significant(value)} ms"
    return significant(value, 4)


def seconds(value: float | None) -> str:
    """A time in seconds to three significant digits (``0.0123 s``, ``4.57 s``, ``1,234 s``)."""
    return DASH if value is None else f"{significant(value, 3)} s"


def duration(value: float | None) -> str:
    """A wall-clock span as a person says it: ``42.3 s``, ``3 min 12 s``, ``2 h 05 min``."""
    if value is None:
        return DASH
    if value < 60:
        return f"{value:.1f} s"
    minutes, secs = divmod(int(round(value)), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def moment(value: dt.datetime | str | None) -> dict[str, str] | None:
    """A date for a ``<time>`` element: ``text`` for people (``23 Nov 2026, 20:41 UTC``), ``iso`` for its
    ``datetime`` and ``title`` attributes."""
    if value in (None, ""):
        return None
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    utc = value.astimezone(dt.timezone.utc)
    return {"text": f"{utc.day} {utc:%b %Y, %H:%M} UTC", "iso": utc.isoformat(timespec="seconds")}


def traffic(metrics: dict[str, Any]) -> list[tuple[str, str]]:
    """A gang's gradient exchange as the individual page shows it (nothing off a gang): per rank and step, the
    bytes sent against dense AllReduce's, the share of gradients kept, and the training time split."""
    sent, dense = metrics.get("bytes_sent"), metrics.get("bytes_dense")
    ranks, steps = metrics.get("ranks"), metrics.get("steps")
    if not isinstance(sent, (int, float)) or not isinstance(dense, (int, float)) or not ranks or not steps:
        return []
    per = float(ranks) * float(steps)
    rows = [("compression", str(metrics.get("compression") or "none")),
            ("sent per rank and step", f"{size(sent / per)} against {size(dense / per)} dense"
                                       + (f" ({100 * sent / dense:.2f}%)" if dense else "")),
            ("gradients kept", DASH if metrics.get("kept") is None else f"{100 * metrics['kept']:.2f}%")]
    times = metrics.get("timings") or {}
    if isinstance(times.get("communicate"), (int, float)) and isinstance(times.get("compute"), (int, float)):
        total = times["communicate"] + times["compute"]
        rows.append(("compute / communication", f"{seconds(times['compute'])} / {seconds(times['communicate'])}"
                     + (f" ({100 * times['communicate'] / total:.0f}% communicating)" if total else "")))
    return rows
