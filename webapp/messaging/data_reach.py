"""Which nodes cannot read a search's registered data set: a Redis hash per search, node -> why (the worker's
own message: the path it could not read and why the server's copy did not come either).

A worker that can neither read nor fetch the set writes its node here (``webapp.worker.runner``) and hands the
evaluation back; its other slots then hand back at once what they are given of that search, without trying
again. The search's loop routes the search's evaluations to the own queues of the nodes not listed
(``webapp.control.placement``), and fails an evaluation only when every live node is listed. The hash lives as
long as the search's other markers (``transport.KEEP``) and goes with the search; a node whose mount is fixed
reads the set again in a new search.

Attempts lost this way do not count against ``NAS_MAX_ATTEMPTS`` (that budget is for workers that die):
:func:`allowed_attempts` adds one per listed node.
"""
from __future__ import annotations

from django.conf import settings

from webapp.messaging import transport

#: The reason of an evaluation handed back because its worker cannot read its data set.
FAILURE = "data_unreadable"


key = transport.unreadable_key


def mark(search_id: int, node: str, why: str) -> None:
    """``node`` cannot read the search's data set, because ``why``."""
    with transport.client().pipeline() as pipe:
        pipe.hset(key(search_id), node, why[:1000]).expire(key(search_id), transport.KEEP)
        pipe.execute()


def nodes(search_id: int) -> dict[str, str]:
    """Every node known not to read the search's data set, with why."""
    return {name.decode(): why.decode() for name, why in transport.client().hgetall(key(search_id)).items()}


def cannot_read(search_id: int, node: str) -> str | None:
    """Why ``node`` cannot read the search's data set; ``None`` when it is not known not to."""
    why = transport.client().hget(key(search_id), node)
    return None if why is None else why.decode()


def allowed_attempts(search_id: int) -> int:
    """``NAS_MAX_ATTEMPTS`` plus one per node that could not read the set (those attempts were not deaths)."""
    return settings.NAS_MAX_ATTEMPTS + int(transport.client().hlen(key(search_id)))
