"""Bring up the project's virtual environment before Django is imported (standard library only).

``manage.py`` calls :func:`ensure_venv` first, so that on a fresh machine with nothing but Python
``python3 manage.py up`` creates ``.venv``, installs the pinned requirements and re-runs itself inside it.
A hash of the requirement files is kept in the venv: editing them triggers a reinstall, nothing else does.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("NAS_VENV", ROOT / ".venv"))
#: Commands that need the test tools too (pytest, playwright, hypothesis).
DEV_COMMANDS = {"test"}


def _venv_python() -> Path:
    return VENV / "bin" / "python"


def _inside_venv() -> bool:
    return Path(sys.prefix).resolve() == VENV.resolve()


def _requirements(dev: bool) -> Path:
    return ROOT / ("requirements-dev.txt" if dev else "requirements.txt")


def _fingerprint(dev: bool) -> str:
    digest = hashlib.sha256()
    for name in ("requirements.txt", "requirements-dev.txt") if dev else ("requirements.txt",):
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def _stamp(dev: bool) -> Path:
    return VENV / (".installed-dev" if dev else ".installed")


def _installed(dev: bool) -> bool:
    stamp = _stamp(dev)
    return stamp.exists() and stamp.read_text().strip() == _fingerprint(dev)


def _say(message: str) -> None:
    print(f"[bootstrap] {message}", file=sys.stderr, flush=True)


def _install(dev: bool) -> None:
    if not _venv_python().exists():
        _say(f"creating the virtual environment in {VENV}")
        venv.EnvBuilder(with_pip=True).create(VENV)
    requirements = _requirements(dev)
    _say(f"installing {requirements.name} into {VENV} (first run: a few minutes, torch is large)")
    command = [str(_venv_python()), "-m", "pip", "install", "--disable-pip-version-check", "-r", str(requirements)]
    if subprocess.call(command) != 0:
        sys.exit(f"[bootstrap] pip could not install {requirements.name}; see the messages above.")
    _stamp(dev).write_text(_fingerprint(dev))
    if dev:  # requirements-dev.txt includes requirements.txt
        _stamp(False).write_text(_fingerprint(False))


#: Asking for help: answered at once when the venv is not installed yet (the install takes minutes).
HELP_FLAGS = {"-h", "--help", "help", "--version", "version"}
#: The project's commands, for that answer (``manage.py help`` lists Django's too once the venv is there).
HELP = """usage: python3 manage.py COMMAND [options]

The project's commands (see README.md):
  up            the whole system on this machine: Redis, web server, control and evaluation workers
                (--port N, --redis-port N, --devices cpu|cuda:0,..., --slots K, --host H, --user NAME)
  search        searches from a terminal: create, edit, launch, watch, stop, resume, clone, list, export
  evalworker    one evaluation worker (--device cpu|cuda:N|all --slots K --pool eval --node NAME)
  controlworker the worker that runs search loops (and restarts dead ones)
  web           the web server alone (--workers N --host H --port P)
  schedule      the optimal inference schedule of an architecture
  test          the test suite (arguments go to pytest)
  changepassword, createsuperuser, migrate, ...: Django's own

The virtual environment (.venv) is not installed yet: the first command other than help creates it and
installs the requirements (a few minutes: torch is large). NAS_NO_BOOTSTRAP=1 skips that step.
"""


def ensure_venv(argv: list[str]) -> None:
    """Make sure the venv holds what ``argv``'s command needs, then continue inside it (re-exec if needed).
    A request for help before the venv is installed is answered with :data:`HELP`, without installing."""
    if os.environ.get("NAS_NO_BOOTSTRAP") == "1":
        return
    dev = len(argv) > 1 and argv[1] in DEV_COMMANDS
    if not _installed(dev):
        if len(argv) > 1 and argv[1] in HELP_FLAGS:
            print(HELP, end="")
            sys.exit(0)
        _install(dev)
    if not _inside_venv():
        os.execv(str(_venv_python()), [str(_venv_python()), *argv])
