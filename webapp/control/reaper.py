"""The reaper: restarts the loop of every active search whose lease expired (its control worker died), and
keeps the registry of evaluation workers up to date (its one writer), with their drain and pause states
written back to Redis after a restart of it.

It runs as a thread in each control worker's main process (not as a task: a task would wait behind the long
search loops that fill the control worker's pool). Several reapers are harmless: a restart is sent at most
once per lease period (a Redis ``SET NX``), and the lease lets only one loop run.

The thread lives in the process that forks Celery's pool, and SQLite's per-file lock bookkeeping is global to a
process: a pool process forked while this thread holds a connection inherits the parent's locks on paper
only, so other processes cannot see its connections; once the others close theirs, SQLite deletes and
recreates the WAL and every later connection of that pool process reads a frozen database (its lease UPDATEs
match nothing, its writes go nowhere). So each round closes its connection, and a fork waits for a round to end.
"""
from __future__ import annotations

import logging
import os
import threading

from django.conf import settings
from django.db import connections

from webapp.control import lease, registry
from webapp.messaging import dispatch, transport

log = logging.getLogger(__name__)


def reap_once() -> list[int]:
    """Send ``run_search`` for each active search without a live loop; returns their ids."""
    restarted = []
    for search_id in lease.expired_searches():
        if transport.client().set(f"nas:reaped:{search_id}", "1", nx=True, px=int(settings.NAS_LEASE_SECONDS * 1000)):
            log.warning("search %s has no live loop: restarting it", search_id)
            dispatch.start_loop(search_id)
            restarted.append(search_id)
    return restarted


class Reaper(threading.Thread):
    def __init__(self, interval: float | None = None) -> None:
        super().__init__(name="reaper", daemon=True)
        self.interval = interval or settings.NAS_REAP_SECONDS
        self.stopped = threading.Event()
        self.rounds = 0
        self._round = threading.Lock()
        # Pool processes are forked from this process (also later, to replace one that died): never mid-round.
        os.register_at_fork(before=self._round.acquire, after_in_parent=self._round.release,
                            after_in_child=self._round.release)

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            self.round()

    def round(self) -> None:
        with self._round:
            try:
                reap_once()
                registry.sync_workers()
                registry.restore_node_states()
            except Exception as error:  # the database or Redis is restarting: next round
                log.warning("reaper round failed: %s", error)
            finally:
                connections.close_all()  # this thread's: no database connection may cross a fork
                self.rounds += 1
