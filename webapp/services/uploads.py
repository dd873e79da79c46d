"""A data set uploaded as a ``.zip`` or ``.tar`` of class folders, in chunks, so that an archive of several
gigabytes goes through ordinary requests and a broken connection costs one chunk, not the whole file.

1. :func:`start`: the name, the file's name and its size in bytes; refused past ``NAS_DATASET_MAX_BYTES``. The
   answer is an upload id and the chunk size (``NAS_UPLOAD_CHUNK_BYTES``, kept with the upload): chunk ``i``
   holds bytes ``[i * chunk_bytes, (i + 1) * chunk_bytes)`` of the file.
2. :func:`put_chunk` for each chunk, in any order, as often as needed: a chunk sent again replaces itself (the
   same bytes), so a client that lost an answer simply sends it again; :func:`status` lists the chunks the
   server holds, so a client can resume after a restart with the ones missing.
3. :func:`finish`: the chunks joined into the archive, which is checked (``evaluators.archives``: no ``..``, no
   absolute path, no link, no non-image named as one, no more than the limit unpacked), unpacked under
   ``NAS_DATA_DIR/datasets/``, scanned and registered like a path (``datasets.record``), the archive kept beside
   it for workers that fetch the set by digest. Any refusal removes what was unpacked and registers nothing.

An upload's state is files, no table: ``NAS_DATA_DIR/uploads/<id>/upload.json`` (owner, name, size) and
``chunk-<i>`` files. Only the user who started an upload may send to it or finish it; another user's id is
"no such upload". An upload that received nothing for ``NAS_UPLOAD_TTL_HOURS`` (its newest file's time: the
start, the last chunk, or a finish begun) is abandoned: :func:`clean_abandoned`, run at every upload's start,
removes it, whoever's it was.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import time
from pathlib import Path
from typing import Any

from django.conf import settings

from evaluators import archives
from webapp.datasets.models import DataSet
from webapp.services import datasets
from webapp.services.datasets import RegisterError

ID = re.compile(r"^[0-9a-f]{32}$")


class NoSuchUpload(LookupError):
    """An upload id that is not one of this user's uploads."""


def uploads_dir() -> Path:
    return Path(settings.DATA_DIR) / "uploads"


def sets_dir() -> Path:
    return Path(settings.DATA_DIR) / "datasets"


def _chunks(meta: dict[str, Any]) -> int:
    return (meta["size"] + meta["chunk_bytes"] - 1) // meta["chunk_bytes"]


def _folder(owner, upload: Any) -> tuple[Path, dict[str, Any]]:
    if not isinstance(upload, str) or not ID.match(upload):
        raise NoSuchUpload(upload)
    folder = uploads_dir() / upload
    try:
        meta = json.loads((folder / "upload.json").read_text())
    except (OSError, ValueError):
        raise NoSuchUpload(upload) from None
    if meta["owner"] != owner.pk:
        raise NoSuchUpload(upload)
    return folder, meta


def last_activity(folder: Path) -> float:
    """The newest modification time of the upload's folder and files (``time.time()`` scale)."""
    times = [folder.stat().st_mtime]
    for entry in os.scandir(folder):
        try:
            times.append(entry.stat(follow_symlinks=False).st_mtime)
        except OSError:  # removed meanwhile (a chunk renamed into place)
            continue
    return max(times)


def clean_abandoned(now: float | None = None) -> list[str]:
    """Remove the uploads that received nothing for ``NAS_UPLOAD_TTL_HOURS``; their ids."""
    root = uploads_dir()
    if not root.is_dir():
        return []
    cutoff = (time.time() if now is None else now) - settings.NAS_UPLOAD_TTL_HOURS * 3600
    removed = []
    for folder in root.iterdir():
        try:
            old = folder.is_dir() and last_activity(folder) < cutoff
        except OSError:
            continue
        if old:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
    return removed


def _limit_message(size: int) -> str:
    return (f"The archive is {size:,} bytes, over the limit of {settings.NAS_DATASET_MAX_BYTES:,} bytes "
            f"(NAS_DATASET_MAX_BYTES, set by the administrator); nothing was registered.")


def start(owner, name: Any, filename: Any, size: Any, shared: Any = False) -> dict[str, Any]:
    """A new upload of ``size`` bytes to register as ``name``; :class:`RegisterError` when the name is taken or
    malformed, the file is no ``.zip``/``.tar``, or ``size`` is past ``NAS_DATASET_MAX_BYTES``."""
    name = datasets.check_name(name)
    if not isinstance(shared, bool):
        raise RegisterError(f"`shared` must be true or false (got {shared!r:.60}).")
    shared = datasets.check_sharing(owner, shared)
    if not isinstance(filename, str) or not filename:
        raise RegisterError("An upload needs the archive's file name (a .zip or .tar of class folders).")
    try:
        archives.suffix_of(filename)
    except archives.ArchiveError as error:
        raise RegisterError(str(error)) from None
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        raise RegisterError(f"An upload needs the archive's size in bytes, a positive integer (got {size!r:.60}).")
    if size > settings.NAS_DATASET_MAX_BYTES:
        raise RegisterError(_limit_message(size))
    clean_abandoned()
    upload = secrets.token_hex(16)
    folder = uploads_dir() / upload
    folder.mkdir(parents=True)
    meta = {"owner": owner.pk, "name": name, "filename": os.path.basename(filename)[:200], "size": size,
            "shared": shared, "chunk_bytes": settings.NAS_UPLOAD_CHUNK_BYTES}
    (folder / "upload.json").write_text(json.dumps(meta))
    return status(owner, upload)


def status(owner, upload: Any) -> dict[str, Any]:
    """What the server holds of the upload: the chunk size and count, and the chunks received."""
    folder, meta = _folder(owner, upload)
    received = sorted(int(p.name[6:]) for p in folder.glob("chunk-*") if p.name[6:].isdigit())
    return {"upload": upload, "name": meta["name"], "filename": meta["filename"], "size": meta["size"],
            "chunk_bytes": meta["chunk_bytes"], "chunks": _chunks(meta), "received": received}


def put_chunk(owner, upload: Any, index: int, data: bytes) -> dict[str, Any]:
    """Keep chunk ``index`` (written whole, then renamed into place: a chunk is there entirely or not at all);
    :class:`RegisterError` when the index is out of range or the chunk's length is not its share of the file."""
    folder, meta = _folder(owner, upload)
    chunks, step = _chunks(meta), meta["chunk_bytes"]
    if not 0 <= index < chunks:
        raise RegisterError(f"Chunk {index} is out of range: this upload has chunks 0 to {chunks - 1}.")
    expected = min(step, meta["size"] - index * step)
    if len(data) != expected:
        raise RegisterError(f"Chunk {index} must be {expected:,} bytes (got {len(data):,}): chunk i holds bytes "
                            f"i*{step} up to the next chunk's first of the {meta['size']:,} announced.")
    part = folder / f".chunk-{index}.{secrets.token_hex(4)}"
    part.write_bytes(data)
    os.replace(part, folder / f"chunk-{index}")
    return status(owner, upload)


def _join(folder: Path, meta: dict[str, Any]) -> Path:
    missing = [i for i in range(_chunks(meta)) if not (folder / f"chunk-{i}").is_file()]
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
        raise RegisterError(f"The upload lacks {len(missing)} chunk(s) ({shown}); send them, then finish again.")
    archive = folder / f"archive{archives.suffix_of(meta['filename'])}"
    with open(archive, "wb") as out:
        for i in range(_chunks(meta)):
            with open(folder / f"chunk-{i}", "rb") as chunk:
                shutil.copyfileobj(chunk, out, 1 << 20)
    return archive


def finish(owner, upload: Any) -> DataSet:
    """Join, check, unpack, scan and register the upload (see the module's docstring); :class:`RegisterError`
    with nothing registered (and the upload removed, unless only chunks are missing)."""
    folder, meta = _folder(owner, upload)
    os.utime(folder)  # active: a clean-up meanwhile leaves it alone
    archive = _join(folder, meta)
    try:
        return register_archive(owner, meta["name"], archive, meta["filename"], meta["shared"], upload[:8])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def register_archive(owner, name: Any, archive: Path, filename: str, shared: Any = False,
                     tag: str | None = None) -> DataSet:
    """Check, unpack, scan and register the archive at ``archive`` (``filename``: its name as the user gave it)
    as ``name``; the archive is moved beside what was unpacked (``NAS_DATA_DIR/datasets/NAME-TAG.zip``) and kept
    for the workers' fetch. :class:`RegisterError` with nothing registered and nothing left behind."""
    name = datasets.check_name(name)
    shared = datasets.check_sharing(owner, shared)
    stem = sets_dir() / f"{name}-{tag or secrets.token_hex(4)}"
    try:
        kept = stem.with_name(stem.name + archives.suffix_of(filename))
    except archives.ArchiveError as error:
        raise RegisterError(str(error)) from None
    try:
        try:
            root = archives.unpack(archive, stem, settings.NAS_DATASET_MAX_BYTES)
        except archives.ArchiveError as error:
            raise RegisterError(str(error)) from None
        found = datasets.scanned(root, filename)
        os.replace(archive, kept)
        return datasets.record(owner, name, shared, root, found, archive=str(kept))
    except BaseException:
        shutil.rmtree(stem, ignore_errors=True)
        kept.unlink(missing_ok=True)
        raise


def register_archive_path(owner, name: Any, path: Any, shared: Any = False) -> DataSet:
    """``manage.py dataset add NAME ARCHIVE``: an archive file under ``NAS_DATASET_ROOTS`` registered as an
    upload would be (a copy of it is kept; the original stays where it is)."""
    resolved = datasets.allowed_path(path)
    if not resolved.is_file():
        raise RegisterError(f"{path} does not exist (or is not a file).")
    if resolved.stat().st_size > settings.NAS_DATASET_MAX_BYTES:
        raise RegisterError(_limit_message(resolved.stat().st_size))
    sets_dir().mkdir(parents=True, exist_ok=True)
    copy = sets_dir() / f".incoming-{secrets.token_hex(8)}"
    shutil.copyfile(resolved, copy)
    try:
        return register_archive(owner, name, copy, resolved.name, shared)
    finally:
        copy.unlink(missing_ok=True)
