"""Faults a test can make the control loop suffer at a chosen point, to prove the engine's rules under them.
Only where the control worker allows it (``NAS_ALLOW_FAULTS=1``, the tests' setting): elsewhere a fault point
costs one look at the environment."""
from __future__ import annotations

import os
import signal

from webapp.messaging import transport


def freeze_key(search_id: int) -> str:
    return f"nas:fault:freeze:{search_id}"


def freeze_point(search_id: int, where: str) -> None:
    """Stop this process (SIGSTOP) here, once, if a test asked for it (``nas:fault:freeze:<search>`` names this
    point). The process sleeps as a swapped-out or debugged loop would, until someone sends it SIGCONT."""
    if os.environ.get("NAS_ALLOW_FAULTS") != "1":
        return
    if transport.client().getdel(freeze_key(search_id)) == where.encode():
        os.kill(os.getpid(), signal.SIGSTOP)
