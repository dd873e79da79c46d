"""An individual's attempts as its page lists them (outcome, reason, exception, traceback summary, node, device,
duration, peak memory), cleaned again of every secret this process knows (as ``failure_view``), and the re-run
button's state: offered on a failed individual of the user's own search, as "Re-run and extend" (with what that
changes) when the search's budget is spent."""
from __future__ import annotations

from typing import Any

from evaluators.failure_text import redact
from webapp.dashboard import display
from webapp.dashboard.failure_view import secrets
from webapp.searches.models import Attempt, Individual, Search
from webapp.services import reruns


def attempt_rows(individual: Individual) -> list[dict[str, Any]]:
    extra = secrets()
    rows = []
    for attempt in Attempt.objects.filter(individual=individual).order_by("number"):
        rows.append({
            "number": attempt.number, "run": attempt.run, "outcome": attempt.outcome, "reason": attempt.reason,
            "kind": attempt.kind, "message": redact(attempt.message, extra=extra, paths=False),
            "traceback": redact(attempt.traceback, extra=extra), "node": attempt.node, "device": attempt.device,
            "slot": attempt.slot, "started": display.moment(attempt.started),
            "duration": display.seconds(attempt.duration),
            "peak_memory": display.size(attempt.peak_memory_bytes) if attempt.peak_memory_bytes else "",
        })
    return rows


def rerun_button(user: Any, individual: Individual) -> dict[str, Any] | None:
    """The button's label and note, ``None`` where no re-run applies (not failed, another's search, a stopping
    or weights search: the service says why if asked anyway)."""
    search = individual.search
    if individual.status != Individual.Status.FAILED or search.owner_id != user.pk:
        return None
    if search.status == Search.Status.STOPPING:
        return None
    if search.status in reruns.ENDED:
        return {"label": "Re-run and extend", "extend": True, "note": reruns.extend_text(search, 1)}
    note = ("The search is stopped: the re-run runs when it is resumed." if search.status == Search.Status.STOPPED
            else "The same genome and training seed, as a new attempt; the strategy keeps the outcome it was told.")
    return {"label": "Re-run", "extend": False, "note": note}


def rerun_failed_button(user: Any, search: Search) -> dict[str, Any] | None:
    """The search page's "Re-run failed (n)" (or "... and extend"), ``None`` when none failed or it is not the
    user's."""
    if search.owner_id != user.pk or search.status in (Search.Status.DRAFT, Search.Status.STOPPING):
        return None
    count = reruns.failed_of(search)
    if not count:
        return None
    if search.status in reruns.ENDED:
        return {"label": f"Re-run failed ({count}) and extend", "extend": True,
                "note": reruns.extend_text(search, count)}
    return {"label": f"Re-run failed ({count})", "extend": False,
            "note": "The same genomes and training seeds, as new attempts; the strategy keeps the outcomes it was told."}
