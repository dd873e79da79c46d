"""The worker's heartbeats: keys in Redis refreshed by a thread while something runs. They expire by
themselves when the process dies, which is how the control loop learns that work was lost.

:class:`Heartbeat` is the one thread behind every beat of a worker: a slot announcing itself
(``slots``), an evaluation (:func:`evaluation_beat`) and a part of a weight search (``weights``).
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings

from webapp.messaging import transport

log = logging.getLogger(__name__)


class Heartbeat:
    """Calls ``beat()`` at once and then every ``NAS_HEARTBEAT_SECONDS`` from a daemon thread, until stopped;
    then ``clear()`` once. A beat that fails (Redis restarting) is logged and tried again at the next one."""

    def __init__(self, name: str, beat: Callable[[], None], clear: Callable[[], None] | None = None) -> None:
        self.name, self.beat, self.clear = name, beat, clear
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, beat_now: bool = True) -> Heartbeat:
        self._thread = threading.Thread(target=self._run, args=(beat_now,), name=self.name, daemon=True)
        self._thread.start()
        return self

    def _run(self, beat_now: bool) -> None:
        if not beat_now and self._stop.wait(settings.NAS_HEARTBEAT_SECONDS):
            return
        while not self._stop.is_set():
            try:
                self.beat()
            except Exception as error:
                log.warning("%s failed: %s", self.name, error)
            self._stop.wait(settings.NAS_HEARTBEAT_SECONDS)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.clear is not None:
            try:
                self.clear()
            except Exception:
                pass

    def __enter__(self) -> Heartbeat:
        self.beat()  # before the work starts: the loop must never see it running without a beat
        return self.start(beat_now=False)

    def __exit__(self, *exc: object) -> None:
        self.stop()


def evaluation_beat(search_id: int, individual_id: int, info: dict[str, Any],
                    also: Callable[[], Any] | None = None) -> Heartbeat:
    """The heartbeat of an individual's evaluation (``with evaluation_beat(...): evaluate``); ``also`` runs
    after each beat (the runner's look at its node's state). Its key is left to expire: the runner clears it
    (``transport.clear_beat``) only after it has pushed what happened, so a loop that finds no beat finds the
    message already waiting."""

    def beat() -> None:
        transport.beat(search_id, individual_id, info)
        if also is not None:
            also()

    return Heartbeat("evaluation-heartbeat", beat)
