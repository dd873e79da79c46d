"""The real stack for the engine's tests: the session's Redis, a control worker and evaluation workers as
subprocesses (``manage.py controlworker`` / ``evalworker``), sharing the test database file. Timeouts are
shortened through the environment so the fault tests take seconds."""
from __future__ import annotations

import itertools
import time

import pytest
from django.conf import settings

from tests.conftest import ProcessLog, manage, manage_env

#: Short heartbeats, leases and graces: a dead worker is noticed within about two seconds.
FAST = {
    "NAS_HEARTBEAT_SECONDS": "0.3",
    "NAS_HEARTBEAT_TTL": "1.5",
    "NAS_LEASE_SECONDS": "3",
    "NAS_REAP_SECONDS": "0.5",
    "NAS_QUEUE_GRACE": "6",
    "NAS_LOOP_WAIT": "0.2",
    "NAS_ALLOW_FAULTS": "1",
    "NAS_USE_TEST_DB": "1",
    "NAS_SOFT_SHUTDOWN_SECONDS": "0",
}
_names = itertools.count()


@pytest.fixture
def engine(redis_url, celery_app, settings, transactional_db):
    """Point this process at the test Redis, with the same short timeouts as the workers."""
    from webapp.searches import transport

    settings.REDIS_URL = redis_url
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                           "CONFIG": {"hosts": [redis_url]}}}
    for name, value in FAST.items():
        if hasattr(settings, name):
            setattr(settings, name, type(getattr(settings, name))(value))
    transport.reset_clients()
    transport.client().flushdb()
    yield Stack(redis_url)
    transport.reset_clients()


class Stack:
    """Starts and stops the worker processes of one test."""

    def __init__(self, redis_url: str) -> None:
        self.redis_url = redis_url
        self.processes: list[ProcessLog] = []

    def env(self, **extra: str) -> dict[str, str]:
        return manage_env(self.redis_url, settings.STATE_DIR, **FAST, **extra)

    def control(self, **extra: str) -> ProcessLog:
        process = ProcessLog(manage("controlworker", "--concurrency", "2", "--node", f"c{next(_names)}"), self.env(**extra))
        self.processes.append(process)
        process.wait_for("ready.", timeout=60)
        return process

    def evaluator(self, node: str, slots: int = 1, **extra: str) -> ProcessLog:
        argv = manage("evalworker", "--device", "cpu", "--node", node, "--slots", str(slots))
        process = ProcessLog(argv, self.env(**extra))
        self.processes.append(process)
        process.wait_for("ready.", timeout=60)
        return process

    def stop(self) -> None:
        for process in self.processes:
            process.stop(timeout=10)
            # Shown by pytest only when the test failed.
            print(f"----- {' '.join(process.process.args[2:])}\n" + "".join(process.lines[-80:]))


@pytest.fixture
def stack(engine):
    yield engine
    engine.stop()


def wait_until(condition, timeout: float, interval: float = 0.2, message: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"{message} not met within {timeout} s")
