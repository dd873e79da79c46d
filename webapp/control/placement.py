"""Where a search's evaluations go when some worker cannot read its data set.

While every node reads it, a packet goes to the search's pool queue, where any free slot takes it. Once a node
has said it can neither read nor fetch the set (``webapp.messaging.data_reach``: the worker lists its node and
hands the evaluation back), the search's packets go to the own queues (``eval.<node>.<device>``) of the live
nodes that are not listed, in turn, so that a listed node is not handed them again; what it was handed before
it is handed back at once by its slots. When every live node is listed, nothing is left to try: the evaluation
fails with ``data_unreadable``, the message naming every node tried and why. With no live slot at all (workers
restarting) the pool queue keeps the packets until one comes.

Each attempt handed back is an ``Attempt`` row (failed, ``data_unreadable``, the node and its reason), and the
search page shows one notice per node (``webapp.searches.data_notices``).
"""
from __future__ import annotations

from typing import Any

from webapp.messaging import data_reach, dispatch, transport

#: Nodes tried, at most, named in the failure of an evaluation no node can read.
NAMED = 20


def readable_slots(search_id: int, live: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The live slots whose node is not known to fail the search's data set."""
    unreadable = data_reach.nodes(search_id)
    return [slot for slot in live if slot.get("node") not in unreadable]


def queues(search_id: int, pool: str, live: list[dict[str, Any]]) -> list[str]:
    """The queues to send the search's packets to, in turn: ``[pool]`` while no node is listed; else the own
    queues of the nodes taking work (``live``) that can read the set; failing those, of the paused or draining
    ones that can (the packets wait for a resume: pausing the one node that reads the set fails nothing); empty
    when no live node can. With no live slot at all the pool queue keeps them until one comes."""
    unreadable = data_reach.nodes(search_id)
    if not unreadable:
        return [pool]
    for slots in (live, transport.live_slots(pool)):
        found = sorted({dispatch.own_queue(slot["node"], slot["device"]) for slot in slots
                        if slot.get("node") not in unreadable})
        if found:
            return found
    return [] if live or transport.live_slots(pool) else [pool]


def nobody_reads(search_id: int) -> str:
    """The failure message of an evaluation that no live node can read: each node tried, and why."""
    unreadable = data_reach.nodes(search_id)
    tried = [f"{node}: {why}" for node, why in sorted(unreadable.items())[:NAMED]]
    more = f" (and {len(unreadable) - NAMED} more)" if len(unreadable) > NAMED else ""
    return (f"no live worker can read the data set; tried {len(unreadable)} node(s){more}: " + " | ".join(tried))
