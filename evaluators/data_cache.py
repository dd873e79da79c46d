"""A worker host's copies of registered data sets fetched from the server, kept by content digest: fetched once
per host, verified, then read from the cache by every evaluation on that host. No Django, no torch: the worker
(``webapp.worker.data_fetch``) hands in how to download.

Layout under the cache folder (``NAS_DATA_CACHE``, by default ``<NAS_DATA_DIR>/cache``):

- ``<digest>/``: the unpacked archive of a ``folder`` set (its root: :func:`evaluators.archives.set_root`), or
  ``<digest>.npz`` for an ``npz`` set;
- ``<digest>.lock``: the file lock (``fcntl.flock``) that lets one process of the host fetch and unpack at a
  time; the others wait on it, then find the copy made;
- ``<digest>.download``, ``<digest>.unpacking``: work in progress, removed after (a copy is only ever renamed
  into place once its digest matched, so a killed fetch leaves nothing a later one would trust).
"""
from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from evaluators import archives, data_files
from evaluators.own_data import DataSetUnreadable, where


def cached_path(cache: Path, digest: str, kind: str) -> Path | None:
    """The verified copy of the set ``digest`` in ``cache``, if one is there."""
    if kind == "npz":
        found = cache / f"{digest}.npz"
        return found if found.is_file() else None
    found = cache / digest
    return archives.set_root(found) if found.is_dir() else None


def fetched(cache: Path, digest: str, kind: str, download: Callable[[Path], None], limit: int) -> tuple[Path, bool]:
    """``(path of the set's copy, whether this call fetched it)``: the cached copy, else one fetched with
    ``download(file)`` (which writes the registered archive, or the ``.npz``, to ``file``), unpacked and checked
    against ``digest``, under the host's lock for that digest. :class:`DataSetUnreadable` naming this worker when
    the download fails or brings other content."""
    if len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
        raise DataSetUnreadable(f"{where()}: {digest[:80]!r} is not a data set digest")
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"{digest}.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = cached_path(cache, digest, kind)
        if found is not None:
            return found, False
        return _fetch(cache, digest, kind, download, limit), True


def _fetch(cache: Path, digest: str, kind: str, download: Callable[[Path], None], limit: int) -> Path:
    part, unpacking = cache / f"{digest}.download", cache / f"{digest}.unpacking"
    part.unlink(missing_ok=True)
    shutil.rmtree(unpacking, ignore_errors=True)
    try:
        download(part)
        if kind == "npz":
            found = data_files.digest(part, "npz")
            _check(found, digest)
            os.replace(part, cache / f"{digest}.npz")
            return cache / f"{digest}.npz"
        try:
            root = archives.unpack(part, unpacking, limit, sniff=False)
        except archives.ArchiveError as error:
            raise DataSetUnreadable(f"{where()}: the archive fetched for {digest[:12]} is refused: {error}") from None
        _check(data_files.digest(root, "folder"), digest)
        os.replace(unpacking, cache / digest)
        return archives.set_root(cache / digest)
    finally:
        part.unlink(missing_ok=True)
        shutil.rmtree(unpacking, ignore_errors=True)


def _check(found: str, digest: str) -> None:
    if found != digest:
        raise DataSetUnreadable(f"{where()}: the copy fetched from the server has digest {found[:12]}, not the "
                                f"registered {digest[:12]}: the server's archive changed, or the transfer broke")
