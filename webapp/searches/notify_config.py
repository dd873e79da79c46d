"""A search's ``notify`` section: where to say that it ended (finished, failed or stopped).

```
"notify": {"webhook": "https://hooks.example.org/nas"}   # a POST of the signed JSON payload (webapp.notifications)
```
Optional in every kind; absent, only the owner's own webhook (if set) is called. The address rule,
:func:`check_webhook_url`, is the one the per-user setting uses too: http or https only, a host, no credentials
in it (a password in a URL ends up in logs and on pages), no spaces or control characters.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from webapp.searches.checks import ConfigError, section, shown

#: The longest webhook address accepted.
URL_LENGTH = 2000
FIELDS = ["webhook"]
#: The search forms' help for their webhook field.
WEBHOOK_HELP = ("Optional: an http(s) URL that gets a signed JSON POST when the search finishes, fails or is "
                "stopped (besides your own webhook of the Notifications page).")


class WebhookURLError(ValueError):
    """A webhook address that is refused; the message says why."""


def check_webhook_url(value: Any) -> str:
    """``value`` as a webhook address, or :class:`WebhookURLError` saying what is wrong with it."""
    if not isinstance(value, str) or not value.strip():
        raise WebhookURLError(f"a webhook must be an http or https URL (got {shown(value)})")
    url = value.strip()
    if len(url) > URL_LENGTH:
        raise WebhookURLError(f"a webhook URL has at most {URL_LENGTH} characters (got {len(url)})")
    if any(char.isspace() or not char.isprintable() for char in url):
        raise WebhookURLError("a webhook URL may not hold spaces or control characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number in range
    except ValueError as error:
        raise WebhookURLError(f"not a URL ({error})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise WebhookURLError(f"a webhook must use http or https (got {parts.scheme or 'no scheme'!r}: "
                              f"{shown(url)})")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise WebhookURLError("a webhook URL may not hold credentials (user:password@): the payload is signed "
                              "instead (see the README, 'Told when a search ends')")
    if not parts.hostname:
        raise WebhookURLError(f"a webhook URL needs a host (got {shown(url)})")
    return url


def check_notify(data: Any) -> dict[str, Any]:
    """``{"notify": {...}}`` checked when the configuration has one, else nothing."""
    if data is None:
        return {}
    data = section("notify", data, FIELDS)
    checked = {}
    if data.get("webhook") is not None:
        try:
            checked["webhook"] = check_webhook_url(data["webhook"])
        except WebhookURLError as error:
            raise ConfigError("notify.webhook", str(error)) from None
    return {"notify": checked} if checked else {}
