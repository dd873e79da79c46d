"""The lease a control loop holds on its search: owner and expiry in the search row, renewed every few
seconds. A second loop for the same search exits at once while the lease is live. The lease also fences: every
write of a loop checks, in its own transaction, that the loop still holds the lease (``recording.fenced``), so a
loop that stalled past its expiry (swapped out, stopped, paused in a debugger) and was taken over writes nothing
when it wakes up: it raises :class:`LeaseLost` and stops."""
from __future__ import annotations

import datetime as dt
import os
import socket
import time
import uuid

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from webapp.searches.models import Search

ACTIVE = (Search.Status.RUNNING, Search.Status.STOPPING)


class LeaseLost(RuntimeError):
    """Another loop holds the search now: this one must stop writing at once."""


def new_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _expiry() -> dt.datetime:
    return timezone.now() + dt.timedelta(seconds=settings.NAS_LEASE_SECONDS)


def take(search_id: int, owner: str) -> bool:
    """Take the lease if it is free, expired or already ours."""
    free = Q(lease_owner="") | Q(lease_expires__lt=timezone.now()) | Q(lease_owner=owner)
    return Search.objects.filter(free, pk=search_id, status__in=ACTIVE).update(
        lease_owner=owner, lease_expires=_expiry()
    ) == 1


def renew(search_id: int, owner: str) -> bool:
    """Extend our lease; False if another loop holds it now (then we must stop at once)."""
    return Search.objects.filter(pk=search_id, lease_owner=owner).update(lease_expires=_expiry()) == 1


def keep(search_id: int, owner: str, renewed: float, force: bool = False) -> float:
    """Renew the lease when a third of it has passed since ``renewed`` (``time.monotonic()``), or at once when
    ``force``; returns when it was last renewed. :class:`LeaseLost` when another loop holds it now."""
    now = time.monotonic()
    if not force and now - renewed <= settings.NAS_LEASE_SECONDS / 3:
        return renewed
    if not renew(search_id, owner):
        raise LeaseLost(f"search {search_id}: the lease of {owner} was taken over")
    return now


def release(search_id: int, owner: str) -> None:
    Search.objects.filter(pk=search_id, lease_owner=owner).update(lease_owner="", lease_expires=None)


def holder(search_id: int) -> str:
    """Who holds the search now, for the log of a loop that found it taken (``status, owner until expiry``)."""
    row = Search.objects.filter(pk=search_id).values("status", "lease_owner", "lease_expires").first()
    if row is None:
        return "no such search"
    return f"{row['status']}, lease {row['lease_owner'] or 'free'} until {row['lease_expires']}"


def expired_searches() -> list[int]:
    """Active searches that no live loop holds (their loop died, or was never started)."""
    now = timezone.now()
    grace = now - dt.timedelta(seconds=settings.NAS_LEASE_SECONDS)
    lost = Q(lease_expires__lt=now) | (Q(lease_owner="") & (Q(started__lt=grace) | Q(started__isnull=True)))
    return list(Search.objects.filter(lost, status__in=ACTIVE).values_list("pk", flat=True))
