"""The real stack for the engine's tests: the session's Redis, a control worker and evaluation workers as
subprocesses (``manage.py controlworker`` / ``evalworker``), sharing the test database file. Timeouts are
shortened through the environment so the fault tests take seconds."""
from __future__ import annotations

import itertools
import os
import shutil
import signal
import time

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from tests.conftest import ProcessLog, manage, manage_env
from webapp.settings.env import redis_channel_layer

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
    from webapp.messaging import transport

    settings.REDIS_URL = redis_url
    settings.CHANNEL_LAYERS = {"default": redis_channel_layer(redis_url)}
    for name, value in FAST.items():
        if hasattr(settings, name):
            setattr(settings, name, type(getattr(settings, name))(value))
    transport.reset_clients()
    transport.client().flushdb()
    yield Stack(redis_url)
    transport.reset_clients()


class Stack:
    """Starts and stops the worker processes of one test.

    ``control()`` and ``evaluator()`` return once the worker is ready. With ``wait=False`` they return as soon as
    it is started, and the next call that waits (or ``ready()``) waits for it too: workers started together
    import Django, Celery and PyTorch at the same time, each on a core, instead of one after the other."""

    def __init__(self, redis_url: str) -> None:
        self.redis_url = redis_url
        self.processes: list[ProcessLog] = []
        self.starting: list[ProcessLog] = []

    def env(self, **extra: str) -> dict[str, str]:
        return manage_env(self.redis_url, settings.STATE_DIR, **{**FAST, **extra})

    def kill(self, process: ProcessLog) -> float:
        """kill -9 a worker and every process it started; returns when it was killed."""
        os.killpg(process.process.pid, signal.SIGKILL)
        killed = time.time()
        process.process.wait(timeout=10)
        return killed

    def holding(self, pid: int) -> ProcessLog:
        """The started worker whose process group contains ``pid`` (a pool child of it)."""
        group = os.getpgid(pid)
        return next(p for p in self.processes if p.process.pid == group)

    def start(self, argv: list[str], wait: bool = True, **extra: str) -> ProcessLog:
        """A worker (``manage.py ...`` argv) with this stack's environment; ready when ``wait``."""
        process = ProcessLog(argv, self.env(**extra))
        self.processes.append(process)
        self.starting.append(process)
        if wait:
            self.ready()
        return process

    def ready(self) -> None:
        """Wait until every worker started so far says it is ready."""
        while self.starting:
            self.starting[0].wait_for("ready.", timeout=60)
            self.starting.pop(0)

    def control(self, wait: bool = True, **extra: str) -> ProcessLog:
        return self.start(manage("controlworker", "--concurrency", "2", "--node", f"c{next(_names)}"), wait, **extra)

    def evaluator(self, node: str, slots: int = 1, wait: bool = True, **extra: str) -> ProcessLog:
        return self.start(manage("evalworker", "--device", "cpu", "--node", node, "--slots", str(slots)), wait, **extra)

    def stop(self) -> None:
        """At the end of a test: kill -9 every worker's process group, all at once. The test has checked what it
        checks; a clean SIGTERM shutdown cost each test 1.5-4 s more (measured at load), which no test looked at
        (the tests that stop a worker on purpose do it in their body). Nothing outlives the kill: pool children
        share the worker's group and gang ranks die with their parent (``PR_SET_PDEATHSIG``); the next test's
        ``engine`` empties Redis and pytest-django empties the database. What a clean exit removes is removed
        here: a gang worker's device claims folder (its ``atexit``)."""
        from webapp.worker.device_claims import ledger_folder

        for process in self.processes:
            if process.process.poll() is None:
                try:
                    os.killpg(process.process.pid, signal.SIGKILL)
                except ProcessLookupError:  # exited meanwhile
                    pass
        for process in self.processes:
            process.stop(timeout=10)
            argv = process.process.args
            if "--node" in argv:
                shutil.rmtree(ledger_folder(argv[argv.index("--node") + 1], process.process.pid), ignore_errors=True)
            # Shown by pytest only when the test failed: enough to see a loop start (a failure's tracebacks
            # at shutdown alone fill 80 lines).
            print(f"----- {' '.join(process.process.args[2:])}\n" + "".join(process.lines[-400:]))


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


def simulated_config(evaluations: int = 30, duration: float = 0.3, population: int = 6, **evaluation) -> dict:
    """A regularized search whose evaluations sleep ``duration`` seconds instead of training."""
    return {
        "space": {"name": "chain", "max_layers": 6},
        "strategy": {"name": "regularized", "seed": 1,
                     "params": {"population": population, "sample_size": 3, "max_evaluations": evaluations}},
        "training": {"epochs": 2},
        "evaluation": {"mode": "simulated", "duration": duration, **evaluation},
    }


def first_keys(config: dict, count: int) -> list[str]:
    """The genome keys of the first ``count`` individuals the search will create (its strategy is seeded)."""
    from nas.spaces import space_from_config
    from nas.strategies import get_strategy
    from webapp.searches.config import check_config

    checked = check_config(config)
    strategy = checked["strategy"]
    built = get_strategy(strategy["name"], space_from_config(checked["space"]), strategy["seed"], **strategy["params"])
    return [candidate.key for candidate in built.ask(count)]


def finished(search_id: int, timeout: float = 60):
    from webapp.searches.models import Search

    def done():
        search = Search.objects.get(pk=search_id)
        return search if search.status in (Search.Status.FINISHED, Search.Status.FAILED) else None

    return wait_until(done, timeout, message=f"search {search_id} finished")


def owner():
    return get_user_model().objects.get_or_create(username="tester")[0]


def launched(name: str, config: dict):
    from webapp.services import lifecycle

    return lifecycle.launch(lifecycle.create_search(owner(), name, config))


def assert_each_recorded_once(search, count: int) -> list:
    """Every individual 0..count-1 exists once, is final, and was announced finished exactly once."""
    from collections import Counter

    from webapp.searches.models import Event, Individual

    individuals = list(Individual.objects.filter(search=search).order_by("number"))
    assert [i.number for i in individuals] == list(range(count))
    assert all(i.status in Individual.FINAL for i in individuals), [(i.number, i.status) for i in individuals]
    finishes = Counter(e.data["id"] for e in Event.objects.filter(search=search, type="individual.finished"))
    assert finishes == Counter({i.pk: 1 for i in individuals})
    seqs = list(Event.objects.filter(search=search).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
    return individuals


def ran_together(individuals, first: str, second: str) -> bool:
    """Some evaluation on node ``first`` ran while one on node ``second`` did (their start-to-finish intervals
    overlap): two workers worked in parallel, a fact no machine's load changes (unlike a speedup's size)."""
    spans = {first: [], second: []}
    for i in individuals:
        if i.node in spans and i.started and i.finished:
            spans[i.node].append((i.started, i.finished))
    return any(a0 < b1 and b0 < a1 for a0, a1 in spans[first] for b0, b1 in spans[second])


def running_evaluation(search_id: int, timeout: float = 30) -> tuple[int, dict]:
    """Wait for an individual being evaluated; its id and its heartbeat (node, slot, pid of the evaluating process)."""
    from webapp.messaging import transport
    from webapp.searches.models import Individual

    def one():
        ids = list(Individual.objects.filter(search_id=search_id, status=Individual.Status.RUNNING)
                   .values_list("pk", flat=True))
        beats = transport.heartbeats(search_id, ids)
        return next(((pk, info) for pk, info in beats.items() if info), None)

    return wait_until(one, timeout, interval=0.05, message="an evaluation running")
