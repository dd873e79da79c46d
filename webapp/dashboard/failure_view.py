"""Why an individual failed, as its page shows it: the reason in words, the exception's type and message, the
last lines of its traceback (paths outside the project cut to their file name), the node and device, the peak
memory when measured. Every secret this process knows (``SECRET_KEY``, ``NAS_TASK_KEY``, secret-named environment
variables, URL credentials) is removed again here, whatever the worker wrote."""
from __future__ import annotations

from typing import Any

from django.conf import settings

from evaluators.failure_text import parse
from evaluators.result import FAILURES
from webapp.dashboard import display


def secrets() -> tuple[str, ...]:
    return tuple(str(getattr(settings, name, "") or "") for name in ("SECRET_KEY", "NAS_TASK_KEY"))


def failure_view(individual: Any) -> dict[str, Any] | None:
    """The failure panel's content, ``None`` for an individual that did not fail."""
    if not individual.failure:
        return None
    failure = parse(individual.message or "", extra=secrets())
    peak = (individual.metrics or {}).get("peak_memory_bytes")
    return {"reason": individual.failure, "meaning": FAILURES.get(individual.failure, ""),
            "kind": failure.kind, "text": failure.text, "traceback": failure.traceback,
            "traceback_text": "\n".join(failure.traceback),
            "node": individual.node, "device": individual.device, "slot": individual.slot,
            "attempts": individual.attempts, "peak_memory": display.size(peak) if peak else ""}
