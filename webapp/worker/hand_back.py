"""How a paused node hands its running evaluation back at once: the evaluation's heartbeat thread reads the
node's state at each beat and, once it is ``paused``, signals its own process (``SIGUSR1``); the handler, set
only while an evaluation runs in the slot's main thread, raises :class:`HandedBack` there, which interrupts the
training (or a simulated evaluation's sleep) at its next Python instruction. The runner then reports the
individual ``skipped`` and the loop sends it again, to a node that takes work.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator

from webapp.messaging import node_state

SIGNAL = signal.SIGUSR1


class HandedBack(BaseException):
    """The evaluation was interrupted and goes back to the loop: its node was paused (no message), or what the
    message says (a one-shot search's supernet training handed back when its search stops). A
    ``BaseException``: an evaluator's own ``except Exception`` (which turns errors into failed results) must not
    swallow it."""


def reason(handed: HandedBack, node: str) -> str:
    """Why ``handed`` went back, in words for the log and the skipped message."""
    return str(handed) or f"node {node} was paused"


_armed = False


def _raise(signum, frame) -> None:
    # Installed once and left in place: a signal that arrives late (after the evaluation ended) is ignored here,
    # never left to the default action, which would end the process.
    if _armed:
        raise HandedBack()


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """While the body runs in the main thread, a pause of the node interrupts it with :class:`HandedBack`."""
    global _armed
    if threading.current_thread() is not threading.main_thread():
        yield  # a direct call from a thread (tests): cannot be interrupted, finishes as under a drain
        return
    if signal.getsignal(SIGNAL) is not _raise:
        signal.signal(SIGNAL, _raise)
    _armed = True
    try:
        yield
    finally:
        _armed = False


def pause_watch(node: str) -> Callable[[], bool]:
    """What an evaluation's heartbeat calls at each beat: interrupts this process's evaluation once ``node`` is
    paused (one signal per evaluation); returns whether it did."""
    sent = False

    def check() -> bool:
        nonlocal sent
        if sent or node_state.get(node) != node_state.PAUSED:
            return False
        sent = True
        os.kill(os.getpid(), SIGNAL)
        return True

    return check
