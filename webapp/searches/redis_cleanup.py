"""A deleted search's Redis keys go with it: its result list, markers, heartbeats and kept files
(``transport``), a weight search's parts and weights (``weights_transport``) and a one-shot search's supernet
checkpoint and weights (``oneshot_transport``). Connected to ``post_delete`` of :class:`Search` (the admin's
delete, a cascade from its owner, a shell's ``.delete()``); Redis being away never blocks a deletion."""
from __future__ import annotations

import logging

from django.db.models.signals import post_delete

from webapp.messaging import oneshot_transport, transport, weights_transport
from webapp.searches.models import Search

log = logging.getLogger(__name__)


def forget(sender, instance: Search, **_: object) -> None:
    """Remove every Redis key of the deleted search ``instance``."""
    for keys in (transport, weights_transport, oneshot_transport):
        try:
            keys.forget_search(instance.pk)
        except Exception as error:  # the keys stay behind; the deletion stands
            log.warning("search %s deleted, its %s keys not removed: %s", instance.pk, keys.__name__, error)


def connect() -> None:
    post_delete.connect(forget, sender=Search, dispatch_uid="nas-search-redis-cleanup")
