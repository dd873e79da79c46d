"""What a search's strategy believes (``Strategy.beliefs()``: a policy's probabilities, TPE's good and bad
densities), kept by the control loop beside the strategy's state after each batch of results, for the search
page's beliefs panel (``webapp.dashboard.beliefs_chart``).

Saved in ``Search.strategy_state[KEY]``, not in the stats: the stats are rewritten every few seconds and read by
every list of searches, the state only when results come and by the loop. What is kept: the latest beliefs
whole, and for the kinds charted over time (:data:`OVER_TIME`) each decision's values after each batch, thinned
to at most :data:`MAX_HISTORY` points (every other one dropped when full, so the whole search stays in view).
"""
from __future__ import annotations

from typing import Any

from webapp.searches.models import Search

KEY = "beliefs"
MAX_HISTORY = 40
#: The kinds of beliefs charted over time, and the per-choice values that are (a policy's probabilities).
OVER_TIME = {"policy": "probabilities"}


def recorded(kept: dict[str, Any] | None, beliefs: dict[str, Any]) -> dict[str, Any]:
    """The kept beliefs once ``beliefs`` (the strategy's now) are added to ``kept`` (those saved before)."""
    history = list((kept or {}).get("history", []))
    field = OVER_TIME.get(beliefs.get("kind"))
    if field:
        if len(history) >= MAX_HISTORY:
            history = history[::2]
        history.append({"told": beliefs["told"], "values": [d[field] for d in beliefs["decisions"]]})
    return {"latest": beliefs, "history": history}


def kept_for(search_id: int) -> dict[str, Any] | None:
    """A search's kept beliefs, read alone (not the rest of its strategy state); ``None`` before any."""
    return Search.objects.filter(pk=search_id).values_list(f"strategy_state__{KEY}", flat=True).first()
