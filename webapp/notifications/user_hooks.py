"""A user's notification settings (:class:`~webapp.notifications.models.UserHook`): their webhook, and the secret
that signs every call for their searches. The settings page and the JSON API call these; a bad address raises
:class:`~webapp.searches.notify_config.WebhookURLError` and saves nothing.

The secret is shown in full once, when it is made (:func:`new_secret`); afterwards only its last four characters
(:func:`settings_of`), so a screen share or a shoulder never gives it away.
"""
from __future__ import annotations

import secrets as _random
from typing import Any

from django.conf import settings

from webapp.notifications.models import UserHook
from webapp.searches.notify_config import WebhookURLError, check_webhook_url

#: A secret a user sets themselves (a team's shared one) has at least this many characters.
SECRET_LENGTH = 16

__all__ = ["WebhookURLError", "check_secret", "check_webhook_url", "new_secret", "secret_for", "set_secret",
           "set_webhook", "settings_of"]


def _row(user: Any) -> UserHook:
    return UserHook.objects.get_or_create(user=user)[0]


def settings_of(user: Any) -> dict[str, Any]:
    """What the page and the API show: the webhook, and whose secret signs the calls (never the secret)."""
    row = UserHook.objects.filter(user=user).first()
    own = bool(row and row.secret)
    return {"webhook": row.webhook if row else "",
            "secret": ("…" + row.secret[-4:]) if own else "",
            "secret_source": "own" if own else ("NAS_WEBHOOK_SECRET" if settings.NAS_WEBHOOK_SECRET else "none yet")}


def set_webhook(user: Any, url: Any) -> dict[str, Any]:
    """Set (or, with ``""`` or ``None``, clear) the user's webhook; :class:`WebhookURLError` changes nothing."""
    checked = "" if url in ("", None) else check_webhook_url(url)
    row = _row(user)
    row.webhook = checked
    row.save(update_fields=["webhook", "changed"])
    return settings_of(user)


def new_secret(user: Any) -> str:
    """A new random secret for the user's calls, returned this once in full."""
    row = _row(user)
    row.secret = _random.token_urlsafe(32)
    row.save(update_fields=["secret", "changed"])
    return row.secret


def check_secret(value: Any) -> str:
    """A secret the user chose (shared with a receiver already): 16 to 200 printable characters, else ValueError."""
    if not isinstance(value, str) or len(value) < SECRET_LENGTH or len(value) > 200 \
            or not all(char.isprintable() and not char.isspace() for char in value):
        raise ValueError(f"a secret is {SECRET_LENGTH} to 200 printable characters without spaces, or \"new\"")
    return value


def set_secret(user: Any, value: Any) -> None:
    """Sign the user's calls with ``value`` (:func:`check_secret`; nothing changes when it is refused)."""
    value = check_secret(value)
    row = _row(user)
    row.secret = value
    row.save(update_fields=["secret", "changed"])


def secret_for(user_id: int) -> str:
    """The key that signs calls for this user's searches: their own, else ``NAS_WEBHOOK_SECRET``, else a new one
    of their own (they see it by making a new one on the settings page)."""
    row, _ = UserHook.objects.get_or_create(user_id=user_id)
    if row.secret:
        return row.secret
    if settings.NAS_WEBHOOK_SECRET:
        return settings.NAS_WEBHOOK_SECRET
    row.secret = _random.token_urlsafe(32)
    row.save(update_fields=["secret", "changed"])
    return row.secret
