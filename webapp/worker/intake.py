"""A worker's intake follows its node's state: a draining or paused node stops consuming its queues (so it is
handed nothing it would only give back), and consumes them again once resumed; started with
``evalworker --exit-when-drained``, it exits once drained (nothing running, nothing reserved).

This is only the tap (a gang worker's has a second valve, ``webapp.worker.gang_tap``): whether a slot runs what it
is handed is decided by the runner (``webapp.worker.runner.evaluate_individual``), which skips anything a non-active
node receives anyway (a message reserved before the tap closed). It runs on the consumer's own event loop (Celery's
timer), where cancelling and adding queues is safe.
"""
from __future__ import annotations

import logging
import os
import signal
from typing import Any

from webapp.messaging import node_state

log = logging.getLogger(__name__)
#: How often the worker's main process reads its node's state (seconds).
EVERY = 1.0


class Intake:
    def __init__(self, consumer: Any, node: str, exit_when_drained: bool) -> None:
        self.consumer, self.node, self.exit_when_drained = consumer, node, exit_when_drained
        self.closed: list[str] = []  # the queues this worker stopped consuming

    def check(self) -> None:
        try:
            state = node_state.get(self.node)
        except Exception as error:  # Redis restarting: keep things as they are until it answers
            log.warning("cannot read the state of node %s: %s", self.node, error)
            return
        if node_state.takes_work(state):
            self.open()
            return
        self.close(state)
        if state == node_state.DRAINING and self.exit_when_drained and self.idle():
            log.warning("node %s is drained: exiting (--exit-when-drained)", self.node)
            os.kill(os.getpid(), signal.SIGTERM)

    def close(self, state: str) -> None:
        tasks = self.consumer.task_consumer
        if tasks is None or self.closed:
            return
        names = [queue.name for queue in tasks.queues]
        for name in names:
            self.consumer.cancel_task_queue(name)
        self.closed = names
        log.warning("node %s is %s: stopped taking work from %s", self.node, state, ", ".join(names))

    def open(self) -> None:
        if not self.closed or self.consumer.task_consumer is None:
            return
        for name in self.closed:
            self.consumer.add_task_queue(name)
        log.warning("node %s resumed: taking work from %s again", self.node, ", ".join(self.closed))
        self.closed = []

    @staticmethod
    def idle() -> bool:
        from celery.worker import state

        return not state.active_requests and not state.reserved_requests


def watch(consumer: Any) -> Intake | None:
    """Start following the node's state (an evaluation worker only: ``NAS_NODE`` is set); a gang worker also
    pulls only while its host has room (``webapp.worker.gang_tap``)."""
    node = os.environ.get("NAS_NODE")
    if not node or getattr(consumer, "timer", None) is None:
        return None
    intake = Intake(consumer, node, os.environ.get("NAS_EXIT_WHEN_DRAINED") == "1")
    consumer.timer.call_repeatedly(EVERY, intake.check)
    if os.environ.get("NAS_GANG_DEVICES"):
        from webapp.worker.gang_tap import GangTap

        tap = GangTap(consumer, node)
        consumer.timer.call_repeatedly(EVERY, tap.check)
    return intake
