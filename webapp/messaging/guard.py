"""Messages on the engine's queues that are not what the engine sends: each is rejected once, logged, recorded
in a dead-letter list (``transport.dead_letter``, shown on the nodes page) and removed, and the worker goes on.

Celery itself survives some malformed messages (undecodable bodies, unknown task names, pickles) but not all:
an envelope whose body is a JSON string, or whose body is not ``[args, kwargs, embed]``, made its consumer raise
``ValueError`` ("too many values to unpack") outside any handler; a ``task`` header that is a list made it raise
``TypeError``. The worker died with an unrecoverable error, the message went back to the queue, and it killed
the worker again at every start. Two guards, for the control worker and the evaluation workers alike:

- :class:`GuardedConsumer` (Celery's ``worker_consumer``) checks each message's headers before Celery routes it,
  and refuses any message whose handling raises;
- :class:`CheckedRequest` (the engine's tasks' request class) checks the envelope before Celery reads it and
  turns any problem into Celery's ``InvalidTaskError``, which the consumer answers by rejecting the message
  without requeueing it.

A well-formed envelope whose packet is unsigned or invalid is refused later, by the evaluation task
(``signing.MalformedPacket``), and recorded the same way.
"""
from __future__ import annotations

import logging
import socket
from typing import Any

from celery.exceptions import InvalidTaskError
from celery.worker.consumer import Consumer
from celery.worker.request import Request

from webapp.messaging import transport

log = logging.getLogger(__name__)


def record(reason: str, message_id: Any, body: Any) -> None:
    """Log a refused message and add it to the dead-letter list (best effort: Redis may be what is broken)."""
    log.error("rejected task message %s, nothing changed: %s", message_id, reason)
    try:
        transport.dead_letter({"reason": reason[:500], "message": str(message_id)[:100],
                               "body": repr(body)[:300], "worker": socket.gethostname()})
    except Exception as error:
        log.warning("could not record the rejected message %s: %s", message_id, error)


#: Headers Celery reads as text when present.
OPTIONAL_TEXT = ("shadow", "root_id", "parent_id", "group", "origin", "argsrepr", "kwargsrepr", "lang")


def envelope_problem(headers: Any, payload: Any) -> str | None:
    """What makes a task envelope unreadable, or ``None`` when Celery can read it."""
    if not isinstance(headers, dict):
        return f"headers must be an object (got {type(headers).__name__})"
    for name in ("id", "task"):
        if not isinstance(headers.get(name), str) or not headers[name]:
            return f"header {name!r} must be a non-empty string (got {str(headers.get(name))[:60]!r})"
    for name in OPTIONAL_TEXT:
        if headers.get(name) is not None and not isinstance(headers[name], str):
            return f"header {name!r} must be a string or null (got {str(headers[name])[:60]!r})"
    if not isinstance(headers.get("retries", 0), int) or not isinstance(headers.get("ignore_result"), (bool, type(None))):
        return "headers 'retries' and 'ignore_result' must be an integer and a boolean"
    limits = headers.get("timelimit")
    if limits is not None and not (isinstance(limits, (list, tuple)) and len(limits) == 2 and all(
            limit is None or (isinstance(limit, (int, float)) and not isinstance(limit, bool)) for limit in limits)):
        return f"header 'timelimit' must be [soft, hard] seconds or nulls (got {str(limits)[:60]!r})"
    if not isinstance(payload, (list, tuple)) or len(payload) != 3:
        return f"the body must be [args, kwargs, embed] (got {payload!r:.80})"
    args, kwargs, embed = payload
    if not isinstance(args, (list, tuple)) or not isinstance(kwargs, dict) or not isinstance(embed, (dict, type(None))):
        return f"the body must be [list, object, object] (got {type(args).__name__}, {type(kwargs).__name__}, " \
               f"{type(embed).__name__})"
    return None


class CheckedRequest(Request):
    """Celery's request, built only from an envelope that can be read; otherwise ``InvalidTaskError``."""

    def __init__(self, message, *args, **kwargs) -> None:
        headers = kwargs.get("headers") or getattr(message, "headers", None)
        try:
            payload = kwargs["body"] if kwargs.get("decoded") else message.payload
        except Exception as error:  # not JSON, or a content type we refuse (pickle)
            raise self._refuse(message, f"undecodable body: {type(error).__name__}: {error}") from None
        problem = envelope_problem(headers, payload)
        if problem:
            raise self._refuse(message, problem)
        try:
            super().__init__(message, *args, **kwargs)
        except InvalidTaskError as error:
            raise self._refuse(message, str(error)) from None
        except Exception as error:  # any other field Celery cannot read
            raise self._refuse(message, f"{type(error).__name__}: {error}") from None

    @staticmethod
    def _refuse(message, reason: str) -> InvalidTaskError:
        return InvalidTaskError(reason)  # the consumer logs, records and rejects it (GuardedConsumer)


class GuardedConsumer(Consumer):
    """Celery's consumer, refusing a message whose headers cannot be routed and any message whose handling
    raises, instead of dying with it."""

    def create_task_handler(self, *args: Any, **kwargs: Any):
        handle = super().create_task_handler(*args, **kwargs)
        recoverable = tuple(self.connection_errors) + tuple(self.channel_errors)

        def on_task_received(message) -> None:
            headers = getattr(message, "headers", None)
            task = headers.get("task") if isinstance(headers, dict) else None
            if headers and not isinstance(task, (str, type(None))):
                return self._refuse(message, f"header 'task' must be a task name (got {str(task)[:60]!r})")
            try:
                return handle(message)
            except recoverable:
                raise  # the connection is gone: Celery reconnects and the message comes back
            except Exception as error:
                return self._refuse(message, f"{type(error).__name__}: {error}")

        return on_task_received

    def _refuse(self, message, reason: str) -> None:
        _record_message(message, reason)
        message.reject_log_error(log, self.connection_errors)

    # Celery's own refusals, recorded too (then handled as Celery does: logged and removed).
    def on_invalid_task(self, body, message, exc) -> None:
        _record_message(message, f"invalid task message: {exc}")
        super().on_invalid_task(body, message, exc)

    def on_unknown_task(self, body, message, exc) -> None:
        _record_message(message, f"unknown task: {exc}")
        super().on_unknown_task(body, message, exc)

    def on_unknown_message(self, body, message) -> None:
        _record_message(message, "not a task message (no task header)")
        super().on_unknown_message(body, message)

    def on_decode_error(self, message, exc) -> None:
        _record_message(message, f"undecodable message: {type(exc).__name__}: {exc}")
        super().on_decode_error(message, exc)


def _record_message(message, reason: str) -> None:
    headers = getattr(message, "headers", None)
    record(reason, headers.get("id") if isinstance(headers, dict) else None, getattr(message, "body", None))
