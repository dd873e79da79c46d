"""Sign-in throttling: failed sign-ins are counted per account and per client address; past a limit, every
sign-in for that account or from that address (the right password included) is refused until the lock expires.

The counters live in Redis through Django's cache framework (the ``login`` cache), so every web process of a
deployment shares them. The check sits in the authentication backend, so every way in (the sign-in page, the
admin's) goes through it. A successful sign-in clears its account's counter; an address's counter only
expires, so a valid account of one's own cannot be used to reset the count of guesses at others.

If Redis cannot be reached, sign-ins are let through unthrottled (and a warning logged): an outage of the
cache must not lock everybody out.
"""
from __future__ import annotations

import hashlib
import logging
import math
import time
from datetime import datetime, timezone

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import caches
from django.core.exceptions import PermissionDenied, ValidationError

log = logging.getLogger(__name__)


def client_address(request) -> str:
    """The address the request came from (behind a proxy, the ASGI server must pass the client's on)."""
    return (getattr(request, "META", None) or {}).get("REMOTE_ADDR") or "unknown"


def _keys(username: str, address: str) -> dict[str, str]:
    # Hashed: a username may hold any character and be of any length.
    account = hashlib.sha256(str(username).casefold().encode()).hexdigest()[:32]
    return {"account": f"account:{account}", "address": f"address:{address}"}


def _limits() -> dict[str, int]:
    return {"account": settings.NAS_LOGIN_FAILURES, "address": settings.NAS_LOGIN_ADDRESS_FAILURES}


def retry_after(username: str, address: str) -> int:
    """Seconds until a sign-in for ``username`` from ``address`` is allowed again; 0 if it is now."""
    locks = [f"lock:{key}" for key in _keys(username, address).values()]
    try:
        until = caches["login"].get_many(locks).values()
    except Exception as error:  # noqa: BLE001 - any failure of the cache: let the sign-in through
        log.warning("sign-in throttling is off: the login cache is unreachable (%s)", error)
        return 0
    return max([0, *(math.ceil(value - time.time()) for value in until)])


def record_failure(username: str, address: str) -> int:
    """Count a failed sign-in; lock the account or the address that reached its limit. Returns the seconds
    until the next attempt is allowed (0: not locked)."""
    cache, window = caches["login"], settings.NAS_LOGIN_LOCKOUT
    try:
        for kind, key in _keys(username, address).items():
            cache.add(key, 0, timeout=window)  # the window starts at the first failure
            try:
                count = cache.incr(key)
            except ValueError:  # expired between add and incr: a new window
                cache.add(key, 0, timeout=window)
                count = cache.incr(key)
            if count >= _limits()[kind]:
                cache.set(f"lock:{key}", time.time() + window, timeout=window)
                cache.delete(key)
    except Exception as error:  # noqa: BLE001
        log.warning("could not count a failed sign-in: the login cache is unreachable (%s)", error)
        return 0
    return retry_after(username, address)


def record_success(username: str) -> None:
    try:
        caches["login"].delete(_keys(username, "")["account"])
    except Exception as error:  # noqa: BLE001
        log.warning("could not reset the failed sign-ins of an account: the login cache is unreachable (%s)", error)


class ThrottledModelBackend(ModelBackend):
    """Django's username and password check, behind the throttle. A refused attempt is not checked at all, so
    a locked account reveals nothing about the password tried."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None:
            username = kwargs.get(get_user_model().USERNAME_FIELD)
        if username is None or password is None:
            return None
        address = client_address(request)
        wait = retry_after(username, address)
        if wait > 0:
            if request is not None:
                request.login_retry_after = wait
            raise PermissionDenied("too many failed sign-ins")  # stops authenticate() at this backend
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            wait = record_failure(username, address)
            if request is not None and wait > 0:
                request.login_retry_after = wait
        else:
            record_success(username)
        return user


def throttled_message(seconds: int) -> str:
    at = datetime.fromtimestamp(time.time() + seconds, tz=timezone.utc).strftime("%H:%M:%S UTC")
    minutes = math.ceil(seconds / 60)
    wait = f"{seconds} seconds" if seconds < 120 else f"{minutes} minutes"
    return (f"Too many failed sign-ins for this account or from this address. Sign-in is locked: try again in "
            f"{wait} (at {at}).")


class ThrottledAuthenticationForm(AuthenticationForm):
    """The sign-in form: a locked account or address gets a message that says when to try again."""

    retry_after = 0

    def clean(self):
        try:
            return super().clean()
        except ValidationError:
            self.retry_after = getattr(self.request, "login_retry_after", 0)
            if self.retry_after:
                raise ValidationError(throttled_message(self.retry_after), code="throttled") from None
            raise


class ThrottledLoginView(LoginView):
    """The sign-in page; answers 429 with ``Retry-After`` while the sign-in is locked."""

    form_class = ThrottledAuthenticationForm

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if form.retry_after:
            response.status_code = 429
            response["Retry-After"] = str(form.retry_after)
        return response
