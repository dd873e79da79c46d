"""The evaluation worker's Celery edge: the ``evaluate_batch`` task and the wiring of each pool process as a slot.

Only evaluation workers import this module (``manage.py evalworker`` includes it); the loop sends the task by
name (``webapp.messaging.dispatch``).

``evaluate_batch`` (an evaluation pool's queue): one signed packet of individuals; acked late and rejected on
worker loss, so a killed worker's packet is delivered again. Its requests are checked before Celery reads them
(``webapp.messaging.guard``): a message that is not a readable task is refused once and removed, never a dead worker.
"""
from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import worker_process_init, worker_process_shutdown, worker_ready

from webapp.messaging import dispatch, guard, signing
from webapp.worker import intake, runner, slots, weights

log = logging.getLogger(__name__)


@shared_task(name=dispatch.EVALUATE_BATCH, bind=True, acks_late=True, ignore_result=True,
             Request="webapp.messaging.guard:CheckedRequest")
def evaluate_batch(self, packet: Any = None, signature: Any = "") -> dict:
    try:
        return runner.evaluate_packet(packet, signature, self.request.id)
    except signing.MalformedPacket as error:
        guard.record(str(error), self.request.id, packet)
        return {"rejected": str(error)}


@shared_task(name=dispatch.EVOLVE_PART, acks_late=True, ignore_result=True,
             Request="webapp.messaging.guard:CheckedRequest")
def evolve_part(part: Any = None, signature: Any = "") -> str:
    """One part of a weight search's generation (seed 001); acked late like a packet, so a killed slot's part
    is delivered again (its result is the same whoever computes it)."""
    try:
        return weights.run_part(part, signature)
    except signing.MalformedPacket as error:
        guard.record(str(error), None, part)
        return "rejected"


@worker_process_init.connect
def _start_slot(**_: object) -> None:
    """Each pool process of an evaluation worker is one slot with its own heartbeat."""
    slots.start_slot()


@worker_process_shutdown.connect
def _stop_slot(**_: object) -> None:
    slots.stop_slot()


@worker_ready.connect
def _follow_node_state(sender=None, **_: object) -> None:
    """The worker's main process stops and starts consuming as its node is drained, paused or resumed."""
    intake.watch(sender)
