"""Tasks of the local stack itself."""
import os
import socket
import time

from celery import shared_task


@shared_task(name="webapp.stack.tasks.ping")
def ping(payload: dict) -> dict:
    """Echo ``payload`` with where it ran: the smallest proof that the ``eval`` queue and its workers work."""
    return {
        "echo": payload,
        "node": socket.gethostname(),
        "device": os.environ.get("NAS_DEVICE", "cpu"),
        "pid": os.getpid(),
        "time": time.time(),
    }
