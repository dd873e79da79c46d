"""Fixtures that start real parts: a Redis server (the launcher's way) and Celery worker subprocesses."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


class RedisProcess:
    """A real ``redis-server`` (the binary the launcher uses) that a test can restart on the same port and files."""

    def __init__(self, state_dir: Path) -> None:
        from webapp.stack.redis_server import start_embedded

        self.server, self.process = start_embedded(state_dir)
        self.state_dir = state_dir

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        self.process.terminate()  # SIGTERM: redis-server flushes its AOF, as on a clean shutdown
        self.process.wait(timeout=10)

    def start(self) -> None:
        from webapp.stack.redis_server import start_embedded

        self.server, self.process = start_embedded(self.state_dir, port=self.server.port)


@pytest.fixture(scope="session")
def redis_process(tmp_path_factory) -> RedisProcess:
    """The session's Redis server, private to this test session."""
    server = RedisProcess(tmp_path_factory.mktemp("redis"))
    yield server
    if server.process.poll() is None:
        server.stop()


@pytest.fixture(scope="session")
def redis_url(redis_process) -> str:
    return redis_process.url


@pytest.fixture(scope="session")
def celery_app(redis_url):
    """The project's Celery app, pointed at the test Redis (it is the producer in these tests)."""
    from webapp.celery import app

    app.conf.update(broker_url=redis_url, result_backend=redis_url)
    yield app
    app.pool.force_close_all()


class ProcessLog:
    """A subprocess whose merged output is collected by a thread, so tests can wait for a line."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            argv, env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, bufsize=1, start_new_session=True,
        )
        self.lines: list[str] = []
        self._terminated = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def wait_for(self, needle: str, timeout: float) -> str:
        """The first line containing ``needle``; fails with the whole output if it never comes."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if needle in line:
                    return line
            if self.process.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.05)
        raise AssertionError(f"never saw {needle!r} within {timeout} s; output:\n{self.text}")

    def terminate(self) -> None:
        """SIGTERM to its process group, once: several processes then shut down together (``stop`` waits)."""
        import signal

        if self.process.poll() is None and not self._terminated:
            self._terminated = True
            os.killpg(self.process.pid, signal.SIGTERM)

    def stop(self, timeout: float = 30) -> int:
        import signal

        if self.process.poll() is None:
            self.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._reader.join(timeout=5)
        return self.process.returncode


def manage_env(redis_url: str, state_dir: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        REDIS_URL=redis_url,
        NAS_STATE_DIR=str(state_dir),
        NAS_NO_BOOTSTRAP="1",
        PYTHONUNBUFFERED="1",
        DJANGO_SETTINGS_MODULE="webapp.settings.test",
    )
    env.update(extra)
    return env


def manage(*args: str) -> list[str]:
    return [sys.executable, str(ROOT / "manage.py"), *args]


@pytest.fixture(scope="module")
def eval_worker(redis_url, tmp_path_factory):
    """A real evaluation worker (``manage.py evalworker``) on the CPU, ready to pull from ``eval``, shared by the
    tests of a module (starting one takes ~7 s). Its soft shutdown is 0 s: with the default 10 s, stopping the
    idle worker took 13 s of teardown."""
    env = manage_env(redis_url, tmp_path_factory.mktemp("eval-worker"), NAS_SOFT_SHUTDOWN_SECONDS="0")
    worker = ProcessLog(manage("evalworker", "--device", "cpu", "--node", "testnode"), env)
    worker.wait_for("ready.", timeout=60)
    yield worker
    worker.stop()
