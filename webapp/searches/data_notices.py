"""The search page's notices of workers that cannot read the search's data set, one per node, kept in the
search's ``stats`` (``data_unreadable``: node -> the sentence shown) so that the page, its live events and the
JSON API say the same after the worker is gone. The search's loop adds them (``webapp.control.placement``)."""
from __future__ import annotations

from typing import Any

#: The key of ``Search.stats`` that holds them.
KEY = "data_unreadable"


def notice(node: str, why: str) -> str:
    """``worker NODE cannot read data set D: why`` (the worker's own message says which set and why, naming
    itself first: it is not named twice)."""
    return why if why.startswith(f"worker {node}") else f"worker {node}: {why}"


def note(stats: dict[str, Any], node: str, why: str) -> bool:
    """Keep the notice of ``node`` in ``stats``; True when it is new or says something new."""
    notices = stats.setdefault(KEY, {})
    text = notice(node, why)
    if notices.get(node) == text:
        return False
    notices[node] = text
    return True


def notices(stats: dict[str, Any] | None) -> list[str]:
    """The notices, by node."""
    found = (stats or {}).get(KEY) or {}
    return [found[node] for node in sorted(found)]
