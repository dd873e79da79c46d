"""A worker's way to a registered data set, by its digest: the shared path when this host can read it (a
cluster's shared file system), else the server's archive of it (``webapp.services.dataset_fetch``), downloaded
over HTTP from ``NAS_SERVER_URL`` with a request signed under ``NAS_TASK_KEY``, verified against the digest and
kept in this host's cache (``evaluators.data_cache``, ``NAS_DATA_CACHE``), one fetch at a time under a file
lock. Never through Redis: a data set may be gigabytes. ``NAS_DATA_FETCH=always`` skips the path (a slow
shared file system, or a test of the fetch).

A set that is neither readable nor fetchable fails the evaluation with ``data_unreadable``, the message naming
this worker, the path and why the fetch failed: the runner hands it back for a worker that can, and the search
page shows the message (``webapp.messaging.data_reach``).
"""
from __future__ import annotations

import logging
import os
import shutil
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from django.conf import settings

from evaluators import data_cache
from evaluators.catalog import is_registered
from evaluators.own_data import DataSetUnreadable, where
from webapp.messaging import data_reach
from webapp.messaging.dataset_signing import signed_headers

log = logging.getLogger(__name__)
FAILURE = data_reach.FAILURE
#: Seconds a fetch waits for the server's next bytes before it gives up.
READ_TIMEOUT = 120


def _readable(path: Path) -> bool:
    return path.exists() and os.access(path, os.R_OK | (os.X_OK if path.is_dir() else 0))


def archive_url(digest: str) -> str:
    return f"{settings.NAS_SERVER_URL.rstrip('/')}/api/datasets/archives/{digest}/"


def download(digest: str, target: Path) -> None:
    """The server's archive of the set ``digest`` written to ``target``; :class:`DataSetUnreadable` naming this
    worker and the URL when the server cannot be reached or refuses."""
    url = archive_url(digest)
    request = urllib.request.Request(url, headers=signed_headers(digest))
    try:
        with urllib.request.urlopen(request, timeout=READ_TIMEOUT) as answer, open(target, "wb") as out:
            shutil.copyfileobj(answer, out, 1 << 20)
    except urllib.error.HTTPError as error:
        body = error.read(300).decode(errors="replace")
        raise DataSetUnreadable(f"{where()} could not fetch it from {url}: HTTP {error.code} {body}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise DataSetUnreadable(f"{where()} could not fetch it from {url}: {reason} (is NAS_SERVER_URL the web "
                                f"server's address, reachable from this host?)") from None


def local_copy(spec: dict[str, Any]) -> tuple[str, str]:
    """``(path on this host, how it got there)`` of the registered set ``spec``: ``shared path``,
    ``fetched in N s`` or ``cached``; :class:`DataSetUnreadable` when neither the path nor the server gives it."""
    path = Path(spec["path"])
    if settings.NAS_DATA_FETCH != "always" and _readable(path):
        return str(path), "shared path"
    started = time.monotonic()
    try:
        copy, fetched = data_cache.fetched(Path(settings.NAS_DATA_CACHE), spec["digest"], spec["kind"],
                                           lambda target: download(spec["digest"], target),
                                           settings.NAS_DATASET_MAX_BYTES)
    except DataSetUnreadable as error:
        why = "cannot read" if settings.NAS_DATA_FETCH != "always" else "does not read (NAS_DATA_FETCH=always)"
        raise DataSetUnreadable(f"{where()} {why} the data set {spec['name']!r} at {path}, and {error}"
                                .replace(f"and {where()} ", "and ")) from None
    how = f"fetched in {time.monotonic() - started:.1f} s" if fetched else "cached"
    log.info("data set %s (%s): %s, %s", spec["name"], spec["digest"][:12], how, copy)
    return str(copy), how


def localised(individual: dict[str, Any]) -> dict[str, Any]:
    """``individual`` with its registered set's path (and its held-out set's) replaced by the copy this host
    reads (built-in sets pass unchanged)."""
    spec = individual.get("dataset")
    if not is_registered(spec):
        return individual
    path, _ = local_copy(dict(spec))
    localised_spec = {**spec, "path": path}
    if spec.get("held_out"):  # the search's held-out test set, reached the same way
        held, _ = local_copy(dict(spec["held_out"]))
        localised_spec["held_out"] = {**spec["held_out"], "path": held}
    return {**individual, "dataset": localised_spec}
