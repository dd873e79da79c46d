"""Secrets kept in the state folder: made once per state folder, random, readable by their owner only.

The local settings take ``SECRET_KEY`` and ``NAS_TASK_KEY`` from here when the environment does not set them,
so that no installation signs its sessions or its evaluation messages with a key written in the source. Every
process run against the same state folder (``up``'s children, a worker or ``search`` started by hand) reads the
same files.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

SECRET_KEY_FILE = "secret_key"  #: Django's SECRET_KEY (sessions, CSRF, password reset links)
TASK_KEY_FILE = "task_key"  #: NAS_TASK_KEY (the HMAC of every evaluation message)


def _read(path: Path) -> str:
    value = path.read_text(encoding="utf-8").strip()
    if not value:
        raise ImproperlyConfigured(f"{path} is empty: delete it and a new key is made at the next start")
    if path.stat().st_mode & 0o077:
        try:  # a copy made with a loose umask: only its owner may read a key
            path.chmod(0o600)
        except OSError:
            pass
    return value


def state_secret(state_dir: Path, name: str) -> str:
    """The key in ``state_dir/name``; the first call makes it (random, file mode 0600)."""
    path = state_dir / name
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    state_dir.mkdir(parents=True, exist_ok=True)
    draft = state_dir / f".{name}.{os.getpid()}.new"
    descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(secrets.token_urlsafe(48) + "\n")
    try:
        # Two processes starting at once on a new state folder: the first link wins, and both read its key;
        # no reader ever sees a half-written file.
        os.link(draft, path)
    except FileExistsError:
        pass
    except OSError:  # a file system without hard links
        if not path.exists():
            os.replace(draft, path)
    finally:
        draft.unlink(missing_ok=True)
    return _read(path)
