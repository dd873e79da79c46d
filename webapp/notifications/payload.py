"""What a webhook call says (the README's "Told when a search ends" documents every field) and how it is signed:
``X-NAS-Signature: sha256=<hex HMAC-SHA256 of the raw body with the shared secret>``."""
from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from webapp.searches.kinds import kind_of
from webapp.searches.models import Individual, Search

EVENT = "search.ended"
SIGNATURE_HEADER = "X-NAS-Signature"
DELIVERY_HEADER = "X-NAS-Delivery"
EVENT_HEADER = "X-NAS-Event"


def ended_payload(search: Search, key: str) -> dict[str, Any]:
    """The payload for the end just recorded on ``search`` (its status and reason already saved)."""
    failed = Individual.objects.filter(search=search, status=Individual.Status.FAILED).count()
    ended = search.finished if search.status != Search.Status.STOPPED and search.finished else timezone.now()
    return {
        "event": EVENT, "delivery": key,
        "search": search.pk, "name": search.name, "kind": kind_of(search.config).name,
        "state": search.status, "reason": search.status_reason,
        "best_value": search.best_fitness,
        "evaluations_done": search.evaluations_done, "evaluations_failed": failed,
        "started": search.started.isoformat() if search.started else None,
        "ended": ended.isoformat(),
        "url": settings.NAS_PUBLIC_URL + reverse("search-detail", args=[search.pk]),
    }


def body(payload: dict[str, Any]) -> bytes:
    """The exact bytes sent (and signed): compact JSON, keys in a fixed order."""
    return json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()


def signature(secret: str, data: bytes) -> str:
    """The header's value: ``sha256=`` and the hex HMAC-SHA256 of ``data``."""
    return "sha256=" + hmac.new(secret.encode(), data, hashlib.sha256).hexdigest()


def verify(secret: str, data: bytes, header: str) -> bool:
    """What a receiver does (the README shows the same in five lines): compare in constant time."""
    return hmac.compare_digest(signature(secret, data), header or "")
