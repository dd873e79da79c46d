"""The Redis broker transport of every Celery process here: kombu's own, except that a queue item that is not a
message at all (not JSON, or not an envelope) is refused and recorded (``guard.record``) instead of raising out
of the worker's event loop, which killed the worker ("Unrecoverable error"). The item is already off the queue
when it is read, so it never comes back. TLS, passwords and every option work as with kombu's transport (this
is the same class; only how a read item is delivered changes)."""
from __future__ import annotations

from typing import Any

from kombu.transport import redis


class Channel(redis.Channel):
    def _brpop_read(self, **options: Any) -> bool:
        try:
            return super()._brpop_read(**options)
        except (ValueError, TypeError, AttributeError, KeyError) as error:  # never a connection's error
            from webapp.messaging import guard  # here, not at import: kombu loads this module by name

            guard.record(f"not a task message: {type(error).__name__}: {error}", None, "(a raw queue item)")
            return True


class Transport(redis.Transport):
    Channel = Channel
