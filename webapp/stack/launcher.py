"""``manage.py up``: the whole system on one machine, started and stopped as one.

Order: a lock on the state folder, Redis (``REDIS_URL`` or an embedded server on the state folder's own port),
migrations, the first user, then the web server (``manage.py web``), the control worker and one evaluation
worker per device, each a supervised child. A child that dies (the embedded Redis included) is restarted with
back-off and the rest go on; only Ctrl-C (or SIGTERM) stops every child and the embedded Redis, leaving nothing
running. Every child gets the state folder's keys (``NAS_TASK_KEY``, ``SECRET_KEY``) in its environment.
"""
from __future__ import annotations

import dataclasses
import fcntl
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from django.conf import settings
from django.core.management import call_command

from webapp.stack.devices import detect_devices
from webapp.stack.privileges import root_env
from webapp.stack.processes import Supervisor
from webapp.stack.redis_server import (
    choose_port as choose_redis_port,
    embedded_redis,
    port_is_free,
    redact,
    remember_port,
    require_reachable,
)
from webapp.stack.users import ensure_local_user

MANAGE = Path(__file__).resolve().parent.parent.parent / "manage.py"


class LaunchError(RuntimeError):
    """Why the stack cannot start, in one line."""


@dataclasses.dataclass(frozen=True)
class LaunchOptions:
    state_dir: Path
    host: str = "127.0.0.1"
    port: int = 8000
    redis_url: str = ""  #: explicit ``REDIS_URL``; empty: start an embedded Redis
    redis_port: int | None = None  #: the embedded Redis's port; None: the state folder's, else a free one
    devices: tuple[str, ...] = ()  #: empty: detect
    slots: int = 1
    username: str = "admin"


def choose_port(host: str, port: int, tries: int = 20) -> int:
    for candidate in range(port, port + tries):
        if port_is_free(host, candidate):
            return candidate
    raise LaunchError(f"ports {port}-{port + tries - 1} on {host} are all busy; pass --port with a free one")


def _lock(state_dir: Path):
    state_dir.mkdir(parents=True, exist_ok=True)
    handle = open(state_dir / "launcher.lock", "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise LaunchError(
            f"another `manage.py up` is already running with the state folder {state_dir}; "
            "stop it first, or set NAS_STATE_DIR to another folder"
        ) from None
    return handle


def _wait_http(url: str, supervisor: Supervisor, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dead = supervisor.exited()
        if dead is not None:
            raise LaunchError(f"{dead.name} exited with code {dead.process.returncode} while starting")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except urllib.error.HTTPError:
            return  # it answered
        except OSError:
            time.sleep(0.2)
    raise LaunchError(f"the web server did not answer on {url} within {timeout:.0f} s")


class Launcher:
    def __init__(self, options: LaunchOptions, out=None) -> None:
        self.options = options
        self.supervisor = Supervisor(out=out)
        self.stopping = threading.Event()

    def say(self, line: str) -> None:
        self.supervisor.say("up", line)

    def _child_env(self, redis_url: str, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            REDIS_URL=redis_url,
            NAS_STATE_DIR=str(self.options.state_dir),
            NAS_NO_BOOTSTRAP="1",  # the venv is ready: children skip the requirements check
            PYTHONUNBUFFERED="1",
            DJANGO_SETTINGS_MODULE=os.environ.get("DJANGO_SETTINGS_MODULE", "webapp.settings.local"),
            # The keys this process read (from the environment, else the state folder's key files): every
            # child signs and checks evaluation messages, and sessions, with the same ones.
            NAS_TASK_KEY=settings.NAS_TASK_KEY,
            SECRET_KEY=settings.SECRET_KEY,
        )
        # Run as root, the workers would each print Celery's superuser warning, which is about pickle (JSON only
        # here): C_FORCE_ROOT acknowledges it, for the workers this process starts (webapp.stack.privileges).
        env.update(root_env())
        env.update(extra)
        return env

    def _manage(self, *args: str) -> list[str]:
        return [sys.executable, str(MANAGE), *args]

    def _start_redis(self) -> str:
        if self.options.redis_url:
            require_reachable(self.options.redis_url)
            self.say(f"using the Redis at {redact(self.options.redis_url)}")
            return self.options.redis_url
        port = choose_redis_port(self.options.state_dir, self.options.redis_port)
        server = embedded_redis(self.options.state_dir, port)
        child = self.supervisor.start("redis", server.argv(), stop_last=True)
        server.wait_ready(child.process)
        # The next run takes the same port, and so does a restart of this one (same argv).
        remember_port(self.options.state_dir, server.port)
        # Other terminals' manage.py commands find the embedded server through this file.
        (self.options.state_dir / "redis.url").write_text(server.url)
        self.say(f"started Redis {server.url} (AOF in {server.directory})")
        return server.url

    def run(self) -> int:
        options = self.options
        lock = _lock(options.state_dir)
        try:
            port = choose_port(options.host, options.port)
            if port != options.port:
                self.say(f"port {options.port} is busy; using port {port} instead")
            redis_url = self._start_redis()
            call_command("migrate", interactive=False, verbosity=0)
            password = ensure_local_user(options.username)
            devices = list(options.devices) or detect_devices()
            self.say(f"devices: {', '.join(devices)} ({options.slots} slot(s) each)")
            self._start_children(redis_url, port, devices)
            url = f"http://{options.host}:{port}/"
            _wait_http(url, self.supervisor)
            self._banner(url, password)
            return self._wait()
        finally:
            self.supervisor.stop_all()
            (options.state_dir / "redis.url").unlink(missing_ok=True)
            lock.close()

    def _start_children(self, redis_url: str, port: int, devices: list[str]) -> None:
        env = self._child_env(redis_url)
        # Several uvicorn processes on the port, one per core up to 4 (NAS_WEB_WORKERS; webapp.stack.web_server).
        self.supervisor.start("web", self._manage("web", "--host", self.options.host, "--port", str(port)), env)
        self.supervisor.start("control", self._manage("controlworker"), env)
        for device in devices:
            name = "eval-" + device.replace(":", "")
            argv = self._manage("evalworker", "--device", device, "--slots", str(self.options.slots))
            self.supervisor.start(name, argv, env)

    def _banner(self, url: str, password: str | None) -> None:
        self.say("")
        self.say(f"Dashboard: {url}")
        if password is not None:
            self.say(f"Sign in as '{self.options.username}' with password: {password}")
            self.say("(shown only now; change it with `python3 manage.py changepassword "
                     f"{self.options.username}`)")
        else:
            self.say(f"Sign in with your user (first run: '{self.options.username}'; "
                     "`python3 manage.py changepassword NAME` resets a password)")
        self.say("A process that dies is restarted; press Ctrl-C to stop everything.")
        self.say("")

    def _wait(self) -> int:
        previous = {sig: signal.signal(sig, lambda *_: self.stopping.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            while not self.stopping.wait(0.5):
                self.supervisor.tend()
            self.say("stopping every process ...")
            return 0
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
