"""The calls a search's end owes: written with the end, sent after it commits.

:func:`search_ended` is called inside the transaction that records an end (``webapp.control.shell`` for a loop's
end, ``webapp.services.lifecycle`` for a stop with no loop alive). It writes one :class:`Delivery` per address
(the search's ``notify.webhook`` and its owner's webhook, once each when they are the same), keyed by the search
and the sequence number of the event that recorded the end: so one end is announced once however often its
transaction's caller retries, and a resumed search that ends again is announced again. The task that sends a
call is queued only once the end is committed; the loop never waits for a receiver.
"""
from __future__ import annotations

import logging

from celery import current_app
from django.db import transaction

from webapp.notifications.models import Delivery, UserHook
from webapp.notifications.payload import ended_payload
from webapp.searches.models import Search

log = logging.getLogger(__name__)
#: The Celery task that makes one call (``webapp.notifications.tasks``, run by the control worker).
SEND_WEBHOOK = "webapp.notifications.tasks.send_webhook"
NOTIFY_QUEUE = "notify"


def addresses(search: Search) -> list[str]:
    """Where this search's end is announced: its own webhook, then its owner's, each once."""
    own = (search.config.get("notify") or {}).get("webhook")
    user = UserHook.objects.filter(user_id=search.owner_id).values_list("webhook", flat=True).first()
    return list(dict.fromkeys(url for url in (own, user) if url))


def search_ended(search: Search, end_seq: int) -> list[int]:
    """Owe a call per address for the end recorded by event ``end_seq``; returns the new deliveries' ids (none
    when this end was already owed)."""
    urls = addresses(search)
    if not urls:
        return []
    new = []
    for url in urls:
        delivery, created = Delivery.objects.get_or_create(
            search=search, end_seq=end_seq, url=url,
            defaults={"payload": ended_payload(search, f"search-{search.pk}-end-{end_seq}")})
        if created:
            new.append(delivery.pk)
    transaction.on_commit(lambda: send(new))
    return new


def send(delivery_ids: list[int]) -> None:
    """Queue one task per call (after the end committed); a broker that is away is logged, never raised: the
    end is recorded, and the delivery stays pending (shown in the admin)."""
    for pk in delivery_ids:
        try:
            current_app.send_task(SEND_WEBHOOK, args=[pk], queue=NOTIFY_QUEUE)
        except Exception as error:  # the loop must end cleanly whatever the broker does
            log.warning("could not queue webhook delivery %s: %s", pk, error)

