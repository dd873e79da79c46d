"""The evaluation workers as the nodes page shows them: every slot the registry knows (written by the control
worker's reaper) merged with the slots whose heartbeat is live in Redis right now, so a worker that just joined
shows at once. Read-only: a page view never writes."""
from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.db.models import Count, Q
from django.utils import timezone

from webapp.messaging import transport
from webapp.searches.models import Individual, Worker

FIELDS = ("node", "host", "device", "slot", "slots", "pool", "current")


def worker_table() -> list[dict[str, Any]]:
    """Every known slot with its state (live / stale), current evaluation and counts, by node, device, slot."""
    now = timezone.now()
    stale_after = now - dt.timedelta(seconds=settings.NAS_HEARTBEAT_TTL)
    rows = {w.name: {"name": w.name, **{f: getattr(w, f) for f in FIELDS}, "last_seen": w.last_seen}
            for w in Worker.objects.all()}
    for info in transport.live_slots():
        rows[info["name"]] = {"name": info["name"], **{f: info.get(f, "") for f in FIELDS}, "last_seen": now}
    counts = {
        row["slot"]: row
        for row in Individual.objects.exclude(slot="").values("slot").annotate(
            evaluated=Count("pk"), failed=Count("pk", filter=Q(status=Individual.Status.FAILED))
        )
    }
    table = []
    for row in sorted(rows.values(), key=lambda r: (r["node"], r["device"], r["slot"])):
        live = row["last_seen"] >= stale_after
        table.append({**row, "state": "live" if live else "stale", "current": row["current"] if live else None,
                      "evaluated": counts.get(row["name"], {}).get("evaluated", 0),
                      "failed": counts.get(row["name"], {}).get("failed", 0)})
    return table


def refused_messages(limit: int = 20) -> list[dict[str, Any]]:
    """The task messages workers refused lately, newest first, with a readable time (``[]`` if Redis is away)."""
    try:
        records = transport.dead_letters(limit)
    except Exception:  # the page still shows the workers the database knows
        return []
    return [{**record, "when": dt.datetime.fromtimestamp(record.get("time", 0), tz=dt.timezone.utc)}
            for record in records]
