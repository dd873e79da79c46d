"""A gang worker pulls a candidate only while its host has room for it: free devices for its smallest gang beyond
those the candidates its processes already hold while told to wait are waiting for.

Without it, every free pool process of a gang worker pulls the next candidate, whatever its devices (a host running
one gang of 4 on its 4 devices has three processes free): the candidates it pulls wait there for its devices while
other hosts' devices idle, and a generation's last candidates are held by hosts that are full (simulated with the
real strategies and decisions: up to 1.53x the best fixed split where a central placement is within 1.12x,
``benchmarks/results/allocation-probe-hold.md``).

The rule, the one the benchmark's simulator plays (``benchmarks/allocation_sim.py``, ``pull="handback"``): every
``EVERY`` seconds the worker's main process counts its host's free devices (its ledger) and its candidates told to
wait (``webapp.messaging.cluster_state``'s ``waiting``, each with the gang its decision waits for), and allows as
many more messages as there are smallest gangs in ``free - reserved`` (``nas.allocation.reserved``: the sum of those
gangs; a candidate waiting for a gang of 4 keeps the devices that free up for it, as the plan that told it to wait
assumed, instead of each going to the next candidate pulled); Celery's consumer asks its queue only while fewer
are held (patched ``can_consume``, as Celery's own ``worker_disable_prefetch`` does for Redis;
``nas.allocation.room``). A candidate
that ends, or is handed back, frees its message at once; the allowance is recomputed at the next check. A message
can still reach a host within about 2 s of its devices filling up (the next check, and a wait for a message already
asked of Redis, which ends within kombu's ``brpop_timeout`` of 1 s): that candidate waits or is handed back as any.
"""
from __future__ import annotations

import logging
import os
import time
from types import MethodType
from typing import Any

from nas.allocation import reserved, room
from webapp.messaging import cluster_state

log = logging.getLogger(__name__)


class GangTap:
    """The allowance of one gang worker's consumer; :meth:`check` runs on the consumer's timer."""

    def __init__(self, consumer: Any, host: str) -> None:
        from webapp.worker import device_claims

        self.consumer, self.host = consumer, host
        self.book = device_claims.ledger()
        self.smallest = min(int(size) for size in os.environ["NAS_GANG_SIZES"].split(","))
        self.limit: int | None = None  # messages this worker may hold; None: not computed yet (Celery's own limit)
        self.more: int | None = None  # the room at the last check (logged when it changes)

    def held(self) -> int:
        from celery.worker import state

        return len(state.reserved_requests)

    def check(self) -> None:
        try:
            waiting = cluster_state.waiting_on(self.host)
        except Exception as error:  # Redis restarting: keep the allowance as it is
            log.warning("gang worker %s: waiting candidates not read: %s", self.host, error)
            return
        free = len(self.book.free())
        kept = reserved({"sizes": [self.smallest], "waiting": waiting}, time.time())
        more = room(free, kept, self.smallest)
        if more != self.more:
            log.info("gang worker %s: room for %d more candidate(s) (%d free device(s), %d kept for the %d "
                     "candidate(s) waiting here)", self.host, more, free, kept, len(waiting))
            self.more = more
        self.limit = self.held() + more
        self.install()

    def install(self) -> None:
        """Make the consumer's channel ask for messages only within the allowance (again after a reconnection,
        which makes a new channel)."""
        tasks = getattr(self.consumer, "task_consumer", None)
        qos = getattr(getattr(tasks, "channel", None), "qos", None)
        if qos is None or getattr(qos.can_consume, "__gang_tap__", False):
            return
        original = qos.can_consume
        tap = self

        def can_consume(self_: Any) -> bool:
            if tap.limit is not None and tap.held() >= tap.limit:
                return False
            return original()

        can_consume.__gang_tap__ = True  # type: ignore[attr-defined]
        qos.can_consume = MethodType(can_consume, qos)
