"""An evaluation's heartbeat: a key in Redis refreshed while the evaluation runs. It expires by itself when the
evaluating process dies, which is how the control loop learns that an evaluation was lost."""
from __future__ import annotations

import logging
import threading
from typing import Any

from django.conf import settings

from webapp.messaging import transport

log = logging.getLogger(__name__)


class Heartbeat:
    """Refreshes the individual's heartbeat key while it is evaluated (a thread; the key expires if we die)."""

    def __init__(self, search_id: int, individual_id: int, info: dict[str, Any]) -> None:
        self.search_id, self.individual_id, self.info = search_id, individual_id, info
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="evaluation-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        transport.beat(self.search_id, self.individual_id, self.info)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(settings.NAS_HEARTBEAT_SECONDS):
            try:
                transport.beat(self.search_id, self.individual_id, self.info)
            except Exception as error:
                log.warning("heartbeat of individual %s failed: %s", self.individual_id, error)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        try:
            transport.clear_beat(self.search_id, self.individual_id)
        except Exception:
            pass
