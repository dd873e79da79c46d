"""One webhook call: POST the delivery's payload, signed, with a short timeout; record what happened.

A call that fails (no connection, a timeout, an answer that is not 2xx, a redirect: never followed, the
signature is for this address) raises :class:`DeliveryFailed`, which the task retries with Celery's backoff.
A delivery already sent is not sent again (a task redelivered after its worker died).
"""
from __future__ import annotations

import urllib.error
import urllib.request

from django.conf import settings
from django.utils import timezone

from webapp.notifications import payload
from webapp.notifications.models import Delivery
from webapp.notifications.user_hooks import secret_for

USER_AGENT = "evolutionary-nas-webhook/1"


class DeliveryFailed(Exception):
    """The receiver did not take the call; retried."""


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # a 3xx is an answer that is not 2xx: fails, never followed
        return None


_opener = urllib.request.build_opener(_NoRedirects)


def deliver(delivery_id: int, last_try: bool) -> str:
    """Make the call; returns the delivery's state (``sent``, or ``failed`` after the last try), or raises
    :class:`DeliveryFailed` for a try that may be retried."""
    delivery = Delivery.objects.select_related("search").filter(pk=delivery_id).first()
    if delivery is None or delivery.state == Delivery.State.SENT:
        return "gone" if delivery is None else delivery.state
    data = payload.body(delivery.payload)
    request = urllib.request.Request(delivery.url, data=data, method="POST", headers={
        "Content-Type": "application/json", "User-Agent": USER_AGENT,
        payload.EVENT_HEADER: payload.EVENT, payload.DELIVERY_HEADER: delivery.key,
        payload.SIGNATURE_HEADER: payload.signature(secret_for(delivery.search.owner_id), data),
    })
    error = ""
    try:
        with _opener.open(request, timeout=settings.NAS_WEBHOOK_TIMEOUT) as response:
            status = response.status
    except urllib.error.HTTPError as answer:
        status = answer.code
    except (OSError, ValueError) as failure:  # refused, unreachable, timed out, a bad answer
        status, error = None, f"{type(failure).__name__}: {failure}"
    ok = status is not None and 200 <= status < 300
    delivery.attempts += 1
    delivery.last_error = "" if ok else (error or f"HTTP {status}")[:500]
    delivery.state = Delivery.State.SENT if ok else (Delivery.State.FAILED if last_try else Delivery.State.PENDING)
    delivery.sent = timezone.now() if ok else None
    delivery.save(update_fields=["attempts", "last_error", "state", "sent"])
    if delivery.state == Delivery.State.PENDING:
        raise DeliveryFailed(f"{delivery.key} to {delivery.url}: {delivery.last_error}")
    return delivery.state
