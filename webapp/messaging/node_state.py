"""Whether an evaluation node takes work: ``active`` (the default), ``draining`` (finishes what it runs, takes
nothing new) or ``paused`` (hands its running evaluations back at once, takes nothing new).

The state lives in Redis (``nas:node:<node>``, absent: active), where every worker slot and every loop read it
without a database; the web's services also keep it in the database (``webapp.services.node_control``), and the
control worker's reaper writes it back here after a Redis restart. Pure Redis: no ORM here.
"""
from __future__ import annotations

from webapp.messaging import transport

ACTIVE, DRAINING, PAUSED = "active", "draining", "paused"
STATES = (ACTIVE, DRAINING, PAUSED)


def key(node: str) -> str:
    return f"nas:node:{node}"


def get(node: str) -> str:
    """The node's state (``active`` when none was set, or when Redis holds something unknown)."""
    value = transport.client().get(key(node))
    state = value.decode() if value else ACTIVE
    return state if state in STATES else ACTIVE


def put(node: str, state: str) -> None:
    if state not in STATES:
        raise ValueError(f"a node's state is one of {', '.join(STATES)} (got {state!r})")
    if state == ACTIVE:
        transport.client().delete(key(node))
    else:
        transport.client().set(key(node), state)


def states(nodes: list[str] | None = None) -> dict[str, str]:
    """Every node that is not active (or the state of each of ``nodes``)."""
    redis_ = transport.client()
    if nodes is not None:
        values = redis_.mget([key(n) for n in nodes]) if nodes else []
        return {n: (v.decode() if v else ACTIVE) for n, v in zip(nodes, values)}
    keys = list(redis_.scan_iter(match="nas:node:*", count=1000))
    values = redis_.mget(keys) if keys else []
    return {k.decode()[len("nas:node:"):]: v.decode() for k, v in zip(keys, values) if v}


def takes_work(state: str) -> bool:
    """The one rule: only an active node starts an evaluation."""
    return state == ACTIVE


def idle_reason(pool: str) -> str:
    """Why a running search of ``pool`` gets nothing evaluated, when every live worker of the pool is drained
    or paused (empty otherwise, and when no worker is live at all). The search's page shows it, and its loop
    publishes each change of it (``webapp.control.shell``)."""
    nodes = {s["node"] for s in transport.live_slots(pool)}
    if not nodes:
        return ""
    found = states(sorted(nodes))
    if any(takes_work(state) for state in found.values()):
        return ""
    words = ", ".join(f"{node} ({state})" for node, state in sorted(found.items()))
    return (f"Every worker of the pool '{pool}' is drained or paused: {words}. Nothing is evaluated until one is "
            "resumed (nodes page, or `manage.py node resume NODE`).")
