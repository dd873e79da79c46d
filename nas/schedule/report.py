"""A schedule report (``evaluators.inference.network.schedule_network``'s JSON) in words, for terminals and pages."""
from __future__ import annotations

from typing import Any

BASELINES = ("sequential", "greedy", "optimal")


def speedups(report: dict[str, Any]) -> dict[str, float]:
    """The measured speed-up of each schedule over sequential execution (``sequential`` is 1)."""
    measured = report.get("measured_ms") or {}
    base = measured.get("sequential")
    return {name: base / value for name, value in measured.items() if base and value}


def format_report(report: dict[str, Any]) -> str:
    """The stages, then latency (measured and modelled) per schedule, then what the search cost."""
    lines = [f"device {report['device']}, batch {report['batch']}: "
             f"{report['graph']['ops']} operators, width {report['graph']['width']}", "",
             "optimal schedule (stage, strategy, modelled ms, operators):", _stages(report["optimal"]), ""]
    gains = speedups(report)
    lines.append(f"{'schedule':<11} {'measured ms':>12} {'modelled ms':>12} {'speed-up':>9}")
    for name in BASELINES:
        lines.append(f"{name:<11} {report['measured_ms'][name]:12.4f} {report['modelled_ms'][name]:12.4f} "
                     f"{gains.get(name, float('nan')):8.2f}x")
    lines.append(f"{'plain module':<11} {report['module_ms']:12.4f}")
    chosen = report["chosen"]
    lines += ["", f"chosen: {chosen} ({report['latency_ms']:.4f} ms)"
              + ("" if chosen == "optimal" else ": the optimal schedule did not pay on this device"),
              "search: {seconds:.3f} s ({dp_seconds:.3f} s of DP), {states} DP states, {profiled} stages profiled, "
              "{cache_hits} cache hits".format(**report["search"])]
    return "\n".join(lines)


def _stages(schedule: dict[str, Any]) -> str:
    return "\n".join(f"{n:>4}. {stage['strategy']:<10} {stage['cost']:8.4f}  {', '.join(stage['ops'])}"
                     for n, stage in enumerate(schedule["stages"], 1))
