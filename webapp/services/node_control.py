"""Drain, pause and resume an evaluation node: who may, what it changes, and each node's state as the pages,
the API and ``manage.py node`` show it.

A node's state is written to the database (what outlives Redis) and to Redis (what every worker slot and loop
reads, ``webapp.messaging.node_state``); the control worker's reaper writes the database's copy back after a
Redis restart (``webapp.control.registry.restore_node_states``). Only a staff user, or the owner of every
search the node serves (its running evaluations, and the running searches of its pools) may change it; everyone
sees it.
"""
from __future__ import annotations

from typing import Any

from webapp.messaging import node_state, transport
from webapp.searches.models import Individual, NodeControl, Search, Worker

#: The actions, and the state each one sets.
ACTIONS = {"drain": node_state.DRAINING, "pause": node_state.PAUSED, "resume": node_state.ACTIVE}


class NodeError(Exception):
    """A refused action, with the HTTP status that says why (404 unknown node or action, 403 not allowed)."""

    status = 400

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def known_nodes() -> dict[str, set[str]]:
    """Every node the registry or a live heartbeat knows, with the pools its slots serve."""
    nodes: dict[str, set[str]] = {}
    for node, pool in Worker.objects.values_list("node", "pool"):
        nodes.setdefault(node, set()).add(pool)
    for slot in transport.live_slots():
        nodes.setdefault(slot["node"], set()).add(slot.get("pool", "eval"))
    return nodes


def served_searches(node: str, pools: set[str]) -> list[Search]:
    """The searches a node serves now: those it evaluates for, and the running ones of its pools."""
    running_here = set(Individual.objects.filter(node=node, status=Individual.Status.RUNNING)
                       .values_list("search_id", flat=True))
    active = Search.objects.filter(status__in=(Search.Status.RUNNING, Search.Status.STOPPING)).select_related("owner")
    return [s for s in active if s.pk in running_here or s.config.get("pool", "eval") in pools]


def check_allowed(user: Any, node: str, pools: set[str]) -> None:
    if user.is_staff:
        return
    served = served_searches(node, pools)
    if not served:
        raise NodeError(f"Only staff may change node {node!r}: it serves no search of yours.", 403)
    others = sorted({s.owner.username for s in served if s.owner_id != user.pk})
    if others:
        raise NodeError(f"Only staff, or the owner of every search node {node!r} serves, may change it; it also "
                        f"serves searches of {', '.join(others)}.", 403)


def set_state(user: Any, node: str, action: str) -> dict[str, Any]:
    """Apply ``action`` (drain, pause, resume) to ``node`` for ``user``; returns the node's row. Raises
    :class:`NodeError` (nothing changed) for an unknown action or node, or a user who may not."""
    if action not in ACTIONS:
        raise NodeError(f"Unknown action {action!r:.60}; the actions are {', '.join(ACTIONS)}.", 404)
    nodes = known_nodes()
    if node not in nodes:
        raise NodeError(f"No node {node!r:.200} is known (see the nodes page or `manage.py node list`).", 404)
    check_allowed(user, node, nodes[node])
    state = ACTIONS[action]
    NodeControl.objects.update_or_create(node=node, defaults={"state": state, "changed_by": user.get_username()})
    node_state.put(node, state)
    return next(row for row in node_rows() if row["node"] == node)


def shown_state(state: str, busy: int) -> str:
    """What a person reads: a draining node with nothing running is ``drained``."""
    return "drained" if state == node_state.DRAINING and busy == 0 else state


def node_rows(slots: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row per node: its state (active, draining, drained, paused), live slots, busy slots, pools."""
    live = transport.live_slots() if slots is None else slots
    pools = known_nodes()
    states = node_state.states(sorted(pools))
    stored = {c.node: c for c in NodeControl.objects.filter(node__in=list(pools))}
    rows = []
    for node in sorted(pools):
        mine = [s for s in live if s.get("node") == node]
        busy = sum(1 for s in mine if s.get("current"))
        control = stored.get(node)
        rows.append({"node": node, "state": shown_state(states.get(node, node_state.ACTIVE), busy),
                     "slots": len(mine), "busy": busy, "pools": sorted(pools[node]),
                     "changed_by": control.changed_by if control else "",
                     "changed": control.changed.isoformat() if control else None})
    return rows


def idle_reason(pool: str) -> str:
    """Why a running search of ``pool`` gets nothing evaluated (``webapp.messaging.node_state.idle_reason``)."""
    return node_state.idle_reason(pool)
