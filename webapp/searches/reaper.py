"""The reaper: restarts the loop of every active search whose lease expired (its control worker died).

It runs as a thread in each control worker's main process (not as a task: a task would wait behind the long
search loops that fill the control worker's pool). Several reapers are harmless: a restart is sent at most
once per lease period (a Redis ``SET NX``), and the lease lets only one loop run.
"""
from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import close_old_connections

from webapp.searches import lease, nodes, transport

log = logging.getLogger(__name__)


def reap_once() -> list[int]:
    """Send ``run_search`` for each active search without a live loop; returns their ids."""
    from webapp.searches.tasks import run_search

    restarted = []
    for search_id in lease.expired_searches():
        if transport.client().set(f"nas:reaped:{search_id}", "1", nx=True, px=int(settings.NAS_LEASE_SECONDS * 1000)):
            log.warning("search %s has no live loop: restarting it", search_id)
            run_search.apply_async(args=[search_id], queue="control")
            restarted.append(search_id)
    return restarted


class Reaper(threading.Thread):
    def __init__(self, interval: float | None = None) -> None:
        super().__init__(name="reaper", daemon=True)
        self.interval = interval or settings.NAS_REAP_SECONDS
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            try:
                close_old_connections()
                reap_once()
                nodes.sync_workers()
            except Exception as error:  # the database or Redis is restarting: next round
                log.warning("reaper round failed: %s", error)
