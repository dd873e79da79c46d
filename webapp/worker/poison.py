"""Messages on an evaluation queue that are not what a search loop sends: each is rejected once, logged,
recorded in a dead-letter list (``transport.dead_letter``, shown on the nodes page) and removed, and the
worker goes on.

Celery itself survives some malformed messages (undecodable bodies, unknown task names, pickles) but not all:
an envelope whose body is a JSON string, or whose body is not ``[args, kwargs, embed]``, made its consumer raise
``ValueError`` ("too many values to unpack") outside any handler, so the worker died with an unrecoverable error,
the message went back to the queue, and it killed the worker again at every start. :class:`CheckedRequest` is the
evaluation task's request class: it checks the envelope before Celery reads it and turns any problem into
Celery's ``InvalidTaskError``, which the consumer answers by rejecting the message without requeueing it.
A well-formed envelope whose packet is unsigned or invalid is refused later, by the task
(``signing.MalformedPacket``), and recorded the same way.
"""
from __future__ import annotations

import logging
import socket
from typing import Any

from celery.exceptions import InvalidTaskError
from celery.worker.request import Request

from webapp.messaging import transport

log = logging.getLogger(__name__)


def record(reason: str, message_id: Any, body: Any) -> None:
    """Log a refused message and add it to the dead-letter list (best effort: Redis may be what is broken)."""
    log.error("rejected evaluation message %s, nothing changed: %s", message_id, reason)
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
        headers = getattr(message, "headers", None)
        message_id = headers.get("id") if isinstance(headers, dict) else None
        record(reason, message_id, getattr(message, "body", None))
        return InvalidTaskError(reason)
