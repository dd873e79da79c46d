"""Who this evaluation slot is, and its heartbeat in Redis while the worker lives.

An evaluation worker (``manage.py evalworker``) sets ``NAS_NODE``, ``NAS_DEVICE``, ``NAS_POOL`` and
``NAS_SLOTS``; each of its pool processes is one slot, numbered by Celery's process index. The control
loop counts the live slots of its pool to know how much work to hand out.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import socket
import sys


from webapp.messaging import transport
from webapp.worker.heartbeat import Heartbeat

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class SlotIdentity:
    node: str
    device: str
    slot: int
    slots: int
    pool: str

    @property
    def name(self) -> str:
        return f"{self.node}/{self.device}/{self.slot}"

    def as_dict(self) -> dict:
        return {**dataclasses.asdict(self), "name": self.name, "host": socket.gethostname(), "pid": os.getpid(),
                "threads": torch_threads()}


def torch_threads() -> int | None:
    """This process's torch CPU threads, once it has loaded torch (never imported here). The heartbeat thread asks
    while the slot's main thread may still be importing torch: a module not yet initialised counts as not loaded."""
    count = getattr(sys.modules.get("torch"), "get_num_threads", None)
    return count() if callable(count) else None


def identity() -> SlotIdentity:
    try:
        from billiard.process import current_process

        index = int(getattr(current_process(), "index", 0) or 0)
    except Exception:  # not in a Celery pool process (a direct call in a test)
        index = 0
    return SlotIdentity(
        node=os.environ.get("NAS_NODE", socket.gethostname()),
        device=os.environ.get("NAS_DEVICE", "cpu"),
        slot=index,
        slots=int(os.environ.get("NAS_SLOTS", "1")),
        pool=os.environ.get("NAS_POOL", "eval"),
    )


class SlotHeartbeat:
    """This slot announced (and what it evaluates) every ``NAS_HEARTBEAT_SECONDS``; retired when it stops."""

    current: dict | None = None

    def __init__(self) -> None:
        self.me = identity()
        self._beat = Heartbeat("slot-heartbeat", self.announce,
                               lambda: transport.retire_slot(self.me.node, self.me.device, self.me.slot))

    def start(self) -> None:
        self._beat.start()

    def announce(self) -> None:
        transport.announce_slot(self.me.node, self.me.device, self.me.slot, {**self.me.as_dict(), "current": self.current})

    def stop(self) -> None:
        self._beat.stop()


_heartbeat: SlotHeartbeat | None = None


def start_slot() -> SlotHeartbeat:
    """Called once in each evaluation pool process (Celery's ``worker_process_init``)."""
    global _heartbeat
    transport.reset_clients()  # never share the parent's Redis sockets across fork
    limit_threads(os.environ.get("NAS_THREADS"))
    _heartbeat = SlotHeartbeat()
    _heartbeat.start()
    return _heartbeat


def limit_threads(threads: str | None) -> None:
    """PyTorch's intra-op threads for this slot (``evalworker --threads``, set by the worker as ``NAS_THREADS``).
    Imported here only when set: a slot process evaluates with torch anyway."""
    if not threads:
        return
    import torch

    torch.set_num_threads(int(threads))


def stop_slot() -> None:
    if _heartbeat is not None:
        _heartbeat.stop()


def set_current(current: dict | None) -> None:
    """What this slot evaluates now (shown on the nodes page); announced at once."""
    if _heartbeat is not None:
        _heartbeat.current = current
        try:
            _heartbeat.announce()
        except Exception:
            pass
