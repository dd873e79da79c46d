"""An individual's inference schedule as its page shows it (the ``schedule`` metric the worker recorded when
the search measured latency). Plain data in, plain rows out; no torch."""
from __future__ import annotations

from typing import Any

from nas.schedule.report import BASELINES, speedups


def schedule_view(metrics: dict[str, Any] | None) -> dict[str, Any] | None:
    """Stages and the latency table of ``metrics["schedule"]``; ``None`` when there is none (or it is not one
    this page can read, e.g. from a newer worker)."""
    report = (metrics or {}).get("schedule")
    try:
        gains = speedups(report)
        # the optimal schedule's stages, also where the worker kept sequential execution because it did not pay
        schedule = report.get("optimal") or report["schedule"]
        return {
            "device": str(report["device"]), "batch": int(report["batch"]), "chosen": str(report["chosen"]),
            "latency_ms": float(report["latency_ms"]),
            "stages": [{"number": n, "strategy": str(stage["strategy"]), "ops": [str(op) for op in stage["ops"]],
                        "cost_ms": float(stage["cost"])} for n, stage in enumerate(schedule["stages"], 1)],
            "rows": [{"name": name, "measured_ms": float(report["measured_ms"][name]),
                      "modelled_ms": float(report["modelled_ms"][name]), "speedup": gains.get(name)}
                     for name in BASELINES],
            "search_seconds": float(report["search"]["seconds"]),
            "profiled": int(report["search"]["profiled"]), "cache_hits": int(report["search"]["cache_hits"]),
        }
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
