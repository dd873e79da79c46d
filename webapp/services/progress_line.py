"""A search's progress in one line of text, for the ``search watch`` command (pure: numbers in, text out)."""
from __future__ import annotations

from typing import Any

BAR = 24


def bar(done: int, total: int, width: int = BAR) -> str:
    """``[#######.........]``; an unknown total shows an empty bar."""
    filled = min(width, round(width * done / total)) if total > 0 else 0
    return "[" + "#" * filled + "." * (width - filled) + "]"


def speedup_text(summary: dict[str, Any]) -> str:
    """``speedup 1.84/2 (92%)``: the speedup of ``accounting.summary`` against the slots the search could use
    on average while it ran (its ideal), and the efficiency; before they are defined, what they wait for."""
    if summary.get("speedup") is None:
        return f"speedup waits for {summary.get('waiting') or 'the first result'}"
    slots = f"{summary['held']:.1f}".removesuffix(".0")
    efficiency = "-" if summary.get("efficiency") is None else f"{summary['efficiency']:.0%}"
    return f"speedup {summary['speedup']:.2f}/{slots} ({efficiency})"


def progress_line(status: str, done: int, total: int, best: float | None, summary: dict[str, Any]) -> str:
    """``running [#####....] 12/30 best 0.9512 | alpha 7 beta 5 | speedup 1.84/2 (92%)``."""
    best_text = "-" if best is None else f"{best:.4f}"
    parts = [f"{status:<8} {bar(done, total)} {done}/{total or '?'} best {best_text}"]
    nodes = summary.get("nodes") or []
    if nodes:
        parts.append(" ".join(f"{node['node']} {node['count']}" for node in nodes))
    if summary:
        parts.append(speedup_text(summary))
    if summary.get("failed"):
        parts.append(f"failed {summary['failed']}")
    return " | ".join(parts)


def final_text(final: dict[str, Any] | None) -> str:
    """``final 1/2 done, best 0.9712``: the final training's runs finished and its result (``final_runs.summary``);
    empty for a search without one."""
    if not final:
        return ""
    if final["state"] == "waiting":
        return f"final {final['top']} x {final['epochs']} epochs after the search"
    ended = sum(1 for run in final["runs"] if run["status"] in ("done", "pruned", "failed"))
    best = "" if final["best"] is None else f", best {final['best']['fitness']:.4f}"
    return f"final {ended}/{len(final['runs'])} done{best}"
