"""The registry of evaluation workers, fed by the slots' heartbeats in Redis (workers never write the
database themselves)."""
from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db.models import Count, Q
from django.utils import timezone

from webapp.searches import transport
from webapp.searches.models import Individual, Worker


def sync_workers() -> int:
    """Upsert a ``Worker`` row for every live slot; returns how many are live."""
    live = transport.live_slots()
    now = timezone.now()
    for info in live:
        Worker.objects.update_or_create(
            name=info["name"],
            defaults={"node": info["node"], "device": info["device"], "slot": info["slot"], "slots": info["slots"],
                      "pool": info["pool"], "host": info.get("host", ""), "pid": info.get("pid"),
                      "current": info.get("current"), "last_seen": now},
        )
    return len(live)


def worker_table() -> list[dict]:
    """Every known slot with its state (live / stale), current evaluation and counts."""
    sync_workers()
    stale_after = timezone.now() - dt.timedelta(seconds=settings.NAS_HEARTBEAT_TTL)
    counts = {
        row["slot"]: row
        for row in Individual.objects.exclude(slot="").values("slot").annotate(
            evaluated=Count("pk"), failed=Count("pk", filter=Q(status=Individual.Status.FAILED))
        )
    }
    return [
        {"name": w.name, "node": w.node, "host": w.host, "device": w.device, "slot": w.slot, "slots": w.slots,
         "pool": w.pool, "state": "live" if w.last_seen >= stale_after else "stale", "current": w.current,
         "last_seen": w.last_seen, "evaluated": counts.get(w.name, {}).get("evaluated", 0),
         "failed": counts.get(w.name, {}).get("failed", 0)}
        for w in Worker.objects.all()
    ]
