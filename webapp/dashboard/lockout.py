"""What django-axes leaves to us for sign-in throttling (the settings are in ``webapp.settings.base``).

axes counts failed sign-ins in the ``login`` cache, per account and per client address, and refuses a sign-in
through its authentication backend. Three things it does not do are done here: each of the two counts has its
own limit (axes compares the larger count with one limit), a successful sign-in resets only its account's count
(axes's reset would clear the address's count too, so one's own account could reset the count of guesses at
others), and an unreachable Redis lets sign-ins through with a warning (axes's cache handler raises, which
would refuse every sign-in). The lockout page answers 429 with ``Retry-After`` and says when to try again.
"""
from __future__ import annotations

import logging
import math
from datetime import timedelta

from axes.handlers.cache import AxesCacheHandler
from axes.helpers import get_client_cache_keys, get_client_username, get_cool_off, make_cache_key_list
from axes.signals import user_locked_out
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import caches
from django.shortcuts import render
from django.utils import timezone
from redis.exceptions import RedisError

log = logging.getLogger(__name__)


def failure_limits() -> dict[str, int]:
    """The failures that lock sign-in, for each of ``AXES_LOCKOUT_PARAMETERS``."""
    return {"username": settings.NAS_LOGIN_FAILURES, "ip_address": settings.NAS_LOGIN_ADDRESS_FAILURES}


class LoginCacheHandler(AxesCacheHandler):
    """axes's cache handler with a limit per lockout parameter, an account-only reset on success, and an
    unreachable cache tolerated."""

    def __init__(self) -> None:
        """No cache kept (axes's handler keeps the first it gets): it is looked up on each use, so that it is
        this thread's and follows a change of ``CACHES``."""

    @property
    def cache(self):
        return caches[settings.AXES_CACHE]

    def is_locked(self, request, credentials=None) -> bool:
        keys = get_client_cache_keys(request, credentials)
        try:
            counts = self.cache.get_many(keys)
        except RedisError as error:
            log.warning("sign-in throttling is off: the login cache is unreachable (%s)", error)
            return False
        limits = failure_limits()
        return any(counts.get(key, 0) >= limits[parameter]
                   for key, parameter in zip(keys, settings.AXES_LOCKOUT_PARAMETERS))

    def user_login_failed(self, sender, credentials: dict, request=None, **kwargs):
        if request is None:
            return super().user_login_failed(sender, credentials, request, **kwargs)  # logs that it cannot count
        try:
            # Only counts: AXES_LOCK_OUT_AT_FAILURE is off, the lock is decided below.
            super().user_login_failed(sender, credentials, request, **kwargs)
        except RedisError as error:
            log.warning("could not count a failed sign-in: the login cache is unreachable (%s)", error)
            return
        if not request.axes_locked_out and self.is_locked(request, credentials):
            request.axes_locked_out = True
            request.axes_credentials = credentials
            user_locked_out.send("axes", request=request, username=get_client_username(request, credentials),
                                 ip_address=request.axes_ip_address)

    def user_logged_in(self, sender, request, user, **kwargs):
        super().user_logged_in(sender, request, user, **kwargs)
        try:
            self.cache.delete_many(make_cache_key_list([{"username": user.get_username()}]))
        except RedisError as error:
            log.warning("could not reset the failed sign-ins of an account: the login cache is unreachable (%s)",
                        error)


def lockout_message(wait: timedelta) -> str:
    seconds = math.ceil(wait.total_seconds())
    at = (timezone.now() + wait).strftime("%H:%M:%S UTC")
    span = f"{seconds} seconds" if seconds < 120 else f"{math.ceil(seconds / 60)} minutes"
    return (f"Too many failed sign-ins for this account or from this address. Sign-in is locked: try again in "
            f"{span} (at {at}).")


def lockout_response(request, original_response=None, credentials=None):
    """The sign-in page (the admin's too), with the lock's message, answering 429 with ``Retry-After``.

    Every failed or refused attempt restarts the cool-off of the counts it touched, so a refused sign-in is
    locked for exactly the cool-off from now. (axes's asynchronous middleware passes the credentials where the
    original response belongs: neither is used.)
    """
    wait = get_cool_off(request)
    form = AuthenticationForm(request, initial={"username": request.POST.get("username", "")})
    context = {"form": form, "next": request.POST.get("next", ""), "lockout": lockout_message(wait)}
    response = render(request, "registration/login.html", context, status=settings.AXES_HTTP_RESPONSE_CODE)
    response["Retry-After"] = str(math.ceil(wait.total_seconds()))
    return response
