"""Workers that ``up`` starts as root (a container's default user, a single-user lab machine).

Celery warns at every worker start that it runs with superuser privileges. The warning is about pickle: a worker
that unpickles messages as root runs whatever a broker client sends as root. This project's workers accept JSON
only (``CELERY_ACCEPT_CONTENT``), so the warning says nothing a user can act on beyond the README's advice (run as
an ordinary user where you can). ``up`` therefore sets ``C_FORCE_ROOT`` (Celery's own "I know") for the workers it
starts, and only when it runs as root itself; the workers then drop that one warning. A worker started by hand as
root still prints it.
"""
from __future__ import annotations

import os
import warnings


def running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def root_env() -> dict[str, str]:
    """What ``up`` adds to its workers' environment: ``C_FORCE_ROOT=1`` when it runs as root, else nothing."""
    return {"C_FORCE_ROOT": "1"} if running_as_root() else {}


def quiet_root_warning() -> None:
    """In a worker: drop Celery's superuser warning when ``up`` acknowledged it (``C_FORCE_ROOT``) and the
    process runs as root. Celery 5 still warns with ``C_FORCE_ROOT`` set; it only stops refusing pickle."""
    if os.environ.get("C_FORCE_ROOT") and running_as_root():
        from celery.exceptions import SecurityWarning

        warnings.filterwarnings("ignore", category=SecurityWarning)
