"""Being told when a search ends: a user's own webhook and signing secret, and one row per call owed. Fields only;
writes go through ``webapp.notifications.outbox`` (the end of a search), ``sender`` (a call's outcome) and
``user_hooks`` (the user's setting)."""
from __future__ import annotations

from django.conf import settings
from django.db import models


class UserHook(models.Model):
    """A user's notification settings: a webhook called when any of their searches ends, and the secret every
    call for their searches (theirs and each search's own ``notify.webhook``) is signed with."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification")
    webhook = models.CharField(max_length=2000, blank=True, help_text="Called when any of the user's searches "
                               "ends (empty: none); checked by webapp.searches.notify_config.check_webhook_url.")
    secret = models.CharField(max_length=200, blank=True, help_text="HMAC-SHA256 key of the calls' signature "
                              "(empty: NAS_WEBHOOK_SECRET, or one made when first needed). Never shown in full "
                              "but once, when it is made.")
    changed = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"notifications of {self.user}"


class Delivery(models.Model):
    """One webhook call owed for one end of one search: written in the transaction that records the end, so an
    end is announced once per address however often it is retried, and a resumed search that ends again owes a
    new call (its end is a new event)."""

    class State(models.TextChoices):
        PENDING = "pending", "pending"
        SENT = "sent", "sent"
        FAILED = "failed", "failed"

    search = models.ForeignKey("searches.Search", on_delete=models.CASCADE, related_name="deliveries")
    end_seq = models.PositiveBigIntegerField(help_text="The sequence number of the search.status event that "
                                             "recorded the end: with the search, the idempotence key.")
    url = models.CharField(max_length=2000)
    payload = models.JSONField(help_text="What is sent, fixed when the end is recorded (every try sends the same "
                               "bytes).")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING, db_index=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Calls made so far.")
    last_error = models.CharField(max_length=500, blank=True, help_text="Why the last call failed.")
    created = models.DateTimeField(auto_now_add=True)
    sent = models.DateTimeField(null=True, blank=True, help_text="When the receiver answered 2xx.")

    class Meta:
        verbose_name_plural = "deliveries"
        constraints = [models.UniqueConstraint(fields=["search", "end_seq", "url"], name="one_call_per_end")]

    @property
    def key(self) -> str:
        """The idempotence key a receiver sees (``X-NAS-Delivery``): the same for every try of this call."""
        return f"search-{self.search_id}-end-{self.end_seq}"

    def __str__(self) -> str:
        return f"{self.key} to {self.url} ({self.state})"
