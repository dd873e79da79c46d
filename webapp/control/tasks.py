"""The control worker's Celery edge: ``run_search``, one search's whole loop.

Only the control worker imports this module (``manage.py controlworker`` includes it); the web and the reaper
send the task by name (``webapp.messaging.dispatch``). The task is acked early: a long task must never sit
unacked past Redis's visibility timeout, or Redis would hand the same loop to a second worker. If its worker
dies, the lease expires and a reaper starts the loop again.
"""
from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from webapp.control import lease
from webapp.messaging import dispatch, guard
from webapp.searches.kinds import kind_of
from webapp.searches.models import Search

log = logging.getLogger(__name__)


@shared_task(name=dispatch.RUN_SEARCH, acks_late=False, ignore_result=True, time_limit=None, soft_time_limit=None,
             Request="webapp.messaging.guard:CheckedRequest")
def run_search(search_id: Any = None) -> str:
    if not isinstance(search_id, int) or isinstance(search_id, bool):
        guard.record(f"run_search needs a search id (got {str(search_id)[:60]!r})", None, search_id)
        return "rejected"
    owner = lease.new_owner()
    if not lease.take(search_id, owner):
        log.info("search %s is held by a live loop (or not active): nothing to do (%s)", search_id,
                 lease.holder(search_id))
        return "busy"
    log.info("search %s: loop %s started", search_id, owner)
    try:
        kind = kind_of(Search.objects.values_list("config", flat=True).get(pk=search_id))
        return kind.part("loop")(search_id, owner).run()  # a weight search's loop loads torch: imported for one only
    finally:
        lease.release(search_id, owner)
