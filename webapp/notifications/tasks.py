"""The webhook sender's Celery edge: one call per task, retried by Celery (``autoretry_for`` with
``retry_backoff``). Run by the control worker (queue ``notify``); senders queue it by name
(``webapp.notifications.outbox``)."""
from __future__ import annotations

from celery import shared_task
from django.conf import settings

from webapp.notifications import sender


@shared_task(name="webapp.notifications.tasks.send_webhook", bind=True, ignore_result=True,
             autoretry_for=(sender.DeliveryFailed,), max_retries=settings.NAS_WEBHOOK_RETRIES,
             retry_backoff=settings.NAS_WEBHOOK_BACKOFF, retry_backoff_max=settings.NAS_WEBHOOK_BACKOFF_MAX,
             # a call lasts seconds at most: acked late so a worker that dies during one leaves it to be redone;
             # both limits of its own (the engine's default soft limit is hours, above this hard one)
             acks_late=True, soft_time_limit=3 * settings.NAS_WEBHOOK_TIMEOUT + 20,
             time_limit=3 * settings.NAS_WEBHOOK_TIMEOUT + 30)
def send_webhook(self, delivery_id: object) -> str:
    if not isinstance(delivery_id, int) or isinstance(delivery_id, bool):
        return "rejected"  # not a message of ours: nothing to retry
    return sender.deliver(delivery_id, last_try=self.request.retries >= self.max_retries)
