"""The local user the run command creates on its first run, and the user a command line acts as."""
from __future__ import annotations

import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError


def ensure_local_user(username: str) -> str | None:
    """Create ``username`` as a superuser if no user exists yet; return its password only when just created.

    The password is ``NAS_ADMIN_PASSWORD`` when set, else a random one that is shown once and never stored.
    """
    users = get_user_model()
    if users.objects.exists():
        return None
    password = os.environ.get("NAS_ADMIN_PASSWORD") or secrets.token_urlsafe(12)
    users.objects.create_superuser(username=username, email="", password=password)
    return password


def acting_user(username: str | None, flag: str):
    """The user a management command acts as: ``username`` (given with ``flag``) or else the first superuser; a
    clear :class:`CommandError` when there is no such user."""
    users = get_user_model()
    if username:
        try:
            return users.objects.get(username=username)
        except users.DoesNotExist:
            raise CommandError(f"no user {username!r}") from None
    first = users.objects.filter(is_superuser=True).order_by("pk").first()
    if first is None:
        raise CommandError(f"no user yet: pass {flag}, or create one (`manage.py createsuperuser`, or run `up` once)")
    return first
