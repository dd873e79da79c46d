"""Celery tasks of the engine: thin, they call the loop and the worker-side evaluation.

- ``run_search`` (queue ``control``): one search's whole loop, a long task acked early so that Redis never
  hands it to a second worker (the lease and the reaper restart it if its worker dies).
- ``evaluate_batch`` (an ``eval`` pool queue): one packet of individuals; acked late and rejected on worker
  loss, so a killed worker's packet is delivered again.
"""
from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_process_init, worker_process_shutdown

from webapp.searches import evaluation, lease, packets, slots

log = logging.getLogger(__name__)


@shared_task(name="webapp.searches.tasks.run_search", acks_late=False, ignore_result=True,
             time_limit=None, soft_time_limit=None)
def run_search(search_id: int) -> str:
    from webapp.searches.loop import SearchLoop

    owner = lease.new_owner()
    if not lease.take(search_id, owner):
        log.info("search %s is held by a live loop (or not active): nothing to do (%s)", search_id,
                 lease.holder(search_id))
        return "busy"
    log.info("search %s: loop %s started", search_id, owner)
    try:
        return SearchLoop(search_id, owner).run()
    finally:
        lease.release(search_id, owner)


@shared_task(name="webapp.searches.tasks.evaluate_batch", bind=True, acks_late=True, ignore_result=True)
def evaluate_batch(self, packet: dict, signature: str = "") -> dict:
    try:
        return evaluation.evaluate_packet(packet, signature, self.request.id)
    except packets.MalformedPacket as error:
        log.error("rejected evaluation message %s, nothing changed: %s", self.request.id, error)
        return {"rejected": str(error)}


@worker_process_init.connect
def _start_slot(**_: object) -> None:
    """Each pool process of an evaluation worker is one slot with its own heartbeat."""
    import os

    if os.environ.get("NAS_DEVICE"):
        slots.start_slot()


@worker_process_shutdown.connect
def _stop_slot(**_: object) -> None:
    slots.stop_slot()
