"""The registry of evaluation workers, fed by the slots' heartbeats in Redis (workers never write the database
themselves). Its one writer is the control worker's reaper, once per round."""
from __future__ import annotations

from django.utils import timezone

from webapp.messaging import node_state, transport
from webapp.searches.models import NodeControl, Worker


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


def restore_node_states() -> int:
    """Write every stored drain or pause back to Redis, where the workers read it (after a Redis restart it
    holds none): a drained node stays drained whatever restarts. Returns how many are stored."""
    rows = list(NodeControl.objects.exclude(state=NodeControl.State.ACTIVE).values_list("node", "state"))
    current = node_state.states([node for node, _ in rows])
    for node, state in rows:
        if current.get(node) != state:
            node_state.put(node, state)
    return len(rows)
