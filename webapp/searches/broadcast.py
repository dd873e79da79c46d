"""One way to tell the world what happened to a search: :func:`notify`.

Each event is a row of the search's append-only log with the next sequence number (so a page that missed
some asks for those after the last it saw), then, once the transaction commits, a message to the search's
Channels group. The group message is best effort: the log is the truth.
"""
from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import F

from webapp.searches.models import Event, Individual, Search

log = logging.getLogger(__name__)


def group_name(search_id: int) -> str:
    return f"search.{search_id}"


def event_payload(event: Event) -> dict[str, Any]:
    return {"seq": event.seq, "type": event.type, "data": event.data, "time": event.time.timestamp()}


def notify(search_id: int, type: str, data: dict[str, Any]) -> Event:
    """Append an event to the search's log and publish it after commit."""
    return notify_many(search_id, [(type, data)])[0]


def notify_many(search_id: int, events: list[tuple[str, dict[str, Any]]]) -> list[Event]:
    """Append several events in one transaction (consecutive sequence numbers); publish them after commit."""
    if not events:
        return []
    with transaction.atomic():
        Search.objects.filter(pk=search_id).update(event_seq=F("event_seq") + len(events))
        last = Search.objects.filter(pk=search_id).values_list("event_seq", flat=True).get()
        rows = Event.objects.bulk_create(
            Event(search_id=search_id, seq=last - len(events) + 1 + i, type=type, data=data)
            for i, (type, data) in enumerate(events)
        )
        transaction.on_commit(lambda: publish(search_id, [event_payload(event) for event in rows]))
    return rows


def publish(search_id: int, events: list[dict[str, Any]]) -> None:
    """Send events to the search's group; a failure is logged, never raised (the log has them)."""
    layer = get_channel_layer()
    if layer is None or not events:
        return
    try:
        async_to_sync(layer.group_send)(group_name(search_id), {"type": "search.events", "events": events})
    except Exception as error:
        log.warning("could not publish %d event(s) of search %s: %s", len(events), search_id, error)


def events_after(search_id: int, seq: int, limit: int = 5000) -> list[dict[str, Any]]:
    """The search's events with a sequence number above ``seq``, oldest first."""
    rows = Event.objects.filter(search_id=search_id, seq__gt=seq).order_by("seq")[:limit]
    return [event_payload(event) for event in rows]


def individual_event(individual: Individual) -> dict[str, Any]:
    """What a page needs to draw an individual (the websocket's deltas and the snapshot share it)."""
    return {
        "id": individual.pk, "number": individual.number, "status": individual.status, "fitness": individual.fitness,
        "key": individual.key, "description": individual.description, "generation": individual.generation,
        "operator": individual.operator, "role": individual.role, "node": individual.node, "device": individual.device, "slot": individual.slot,
        "failure": individual.failure, "attempts": individual.attempts,
        "params": (individual.metrics or {}).get("params"),
        "devices": (individual.metrics or {}).get("devices"),  # the gang it held (evalworker --gang), else None
        # why it got those devices (nas.allocation: one sentence) and when its plan expected the work in sight done
        "allocation": (individual.metrics or {}).get("allocation"),
        "allocation_finish": (individual.metrics or {}).get("allocation_finish"),
        "dispatched": individual.dispatched.timestamp() if individual.dispatched else None,
        "started": individual.started.timestamp() if individual.started else None,
        "finished": individual.finished.timestamp() if individual.finished else None,
        "duration": individual.duration,
    }


#: The learning curve's series the pages draw (``webapp.dashboard.curve_chart.METRIC``).
CURVE_METRIC = "val_accuracy"


def finished_event(individual: Individual) -> dict[str, Any]:
    """``individual.finished``: :func:`individual_event` with its learning curve's points (``[epoch, value]``), so a
    page draws the curve of an evaluation that reported no progress on the way (one epoch, or no reports)."""
    curve = [[point.get("epoch"), point[CURVE_METRIC]] for point in individual.curve or ()
             if isinstance(point, dict) and point.get(CURVE_METRIC) is not None]
    return {**individual_event(individual), "curve": curve}

