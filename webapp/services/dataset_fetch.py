"""What a worker downloads when it cannot read a registered set's path: the set's archive, found by content
digest, for a request signed under the installation's task key (``webapp.messaging.dataset_signing``).

The archive: an uploaded set's own (kept at registration); a ``.npz`` is its file; for a folder registered by
path, a ``.tar`` of its class folders' image files, made on the first fetch under ``NAS_DATA_DIR/archives/``
(one maker at a time, a file lock) and kept.
"""
from __future__ import annotations

import fcntl
from pathlib import Path

from django.conf import settings

from evaluators import archives
from webapp.datasets.models import DataSet


def _folder_archive(dataset: DataSet) -> Path:
    folder = Path(settings.DATA_DIR) / "archives"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{dataset.digest}.tar"
    with open(folder / f"{dataset.digest}.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.is_file():
            archives.write_tar(Path(dataset.path), target)
    return target


def archive_for(digest: str) -> Path | None:
    """The file to send for the registered set ``digest`` (made if needed), or ``None`` when no set has it."""
    dataset = DataSet.objects.filter(digest=digest).order_by("pk").first()
    if dataset is None:
        return None
    if dataset.archive and Path(dataset.archive).is_file():
        return Path(dataset.archive)
    if dataset.kind == DataSet.Kind.NPZ:
        return Path(dataset.path)
    made = _folder_archive(dataset)
    DataSet.objects.filter(digest=digest, archive="").update(archive=str(made))
    return made
