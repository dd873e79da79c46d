"""What the control loop and the gang workers share about gangs, in Redis: the work in sight per search (the
loop writes it, the workers' allocators read it) and the search's throughput model per (host, gang size) (the
workers update it as their evaluations end). Both are estimates: a lost update costs one measurement, a missing
key means "no end in sight" and one device each."""
from __future__ import annotations

import json
import logging

from nas.allocation import Pending, ThroughputModel
from webapp.messaging import transport

log = logging.getLogger(__name__)

TTL = 7 * 24 * 3600


def model_key(search_id: int) -> str:
    return f"nas:gang:model:{search_id}"


def pending_key(search_id: int) -> str:
    return f"nas:gang:pending:{search_id}"


def publish_pending(search_id: int, waiting: int, more: int | None) -> None:
    """The loop's view of the work in sight: candidates sent and not started, and how many more the strategy can
    give before its next barrier or its end (``None``: no end known)."""
    try:
        transport.client().set(pending_key(search_id), json.dumps({"waiting": waiting, "more": more}), ex=TTL)
    except Exception as error:
        log.warning("search %s: pending work not published: %s", search_id, error)


def read_pending(search_id: int) -> Pending:
    try:
        raw = transport.client().get(pending_key(search_id))
        data = json.loads(raw) if raw else {}
    except Exception:
        data = {}
    more = data.get("more")
    return Pending(max(1, int(data.get("waiting") or 1)), None if more is None else max(0, int(more)))


def load_model(search_id: int) -> ThroughputModel:
    try:
        raw = transport.client().get(model_key(search_id))
        return ThroughputModel.from_state(json.loads(raw)) if raw else ThroughputModel()
    except Exception:
        return ThroughputModel()


def record_duration(search_id: int, host: str, gang: int, seconds: float) -> None:
    """Add one measured evaluation duration to the search's model."""
    try:
        model = load_model(search_id)
        model.observe(host, gang, seconds)
        transport.client().set(model_key(search_id), json.dumps(model.state_dict()), ex=TTL)
    except Exception as error:
        log.warning("search %s: throughput measurement not saved: %s", search_id, error)
