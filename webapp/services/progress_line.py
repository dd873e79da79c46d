"""A search's progress in one line of text, for the ``search watch`` command (pure: numbers in, text out)."""
from __future__ import annotations

from typing import Any

BAR = 24


def bar(done: int, total: int, width: int = BAR) -> str:
    """``[#######.........]``; an unknown total shows an empty bar."""
    filled = min(width, round(width * done / total)) if total > 0 else 0
    return "[" + "#" * filled + "." * (width - filled) + "]"


def progress_line(status: str, done: int, total: int, best: float | None, summary: dict[str, Any]) -> str:
    """``running [#####....] 12/30 best 0.9512 | alpha 7 beta 5 | speedup 1.84/2 (92%)``."""
    best_text = "-" if best is None else f"{best:.4f}"
    parts = [f"{status:<8} {bar(done, total)} {done}/{total or '?'} best {best_text}"]
    nodes = summary.get("nodes") or []
    if nodes:
        parts.append(" ".join(f"{node['node']} {node['count']}" for node in nodes))
    held = summary.get("held", summary.get("ideal"))
    if held:  # the slots this search could use, on average while it ran (see accounting.summary)
        slots = f"{held:.1f}".removesuffix(".0")
        parts.append(f"speedup {summary['speedup']:.2f}/{slots} ({summary['efficiency']:.0%})")
    if summary.get("failed"):
        parts.append(f"failed {summary['failed']}")
    return " | ".join(parts)
