"""The real engine for a benchmark: a private Redis, a fresh SQLite database, a control worker and evaluation
workers as subprocesses, and searches created and launched from the benchmark's own process.

Nothing is mocked: Celery carries the signed packets, the control loop records every result in the database,
publishes the events through the Channels layer and keeps the live accounting. Only the evaluation is
simulated (``evaluators/simulated.py`` sleeps), so dozens of evaluation slots fit on two cores.

Every process runs in its own process group and gets SIGTERM if this process dies (even by SIGKILL, through
``webapp.stack.processes.Supervisor``); :class:`Stack` is a context manager that stops them all on the way
out, Ctrl-C included, and deletes its temporary folder.

Usage::

    with Stack() as stack:
        with stack.workers([Node("w0", slots=4)]) as pool:
            run = stack.run_search("name", config(pool, ...))
"""
from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from webapp.stack.processes import Supervisor  # noqa: E402  (standard library only: no Django yet)
from webapp.stack.redis_server import embedded_redis  # noqa: E402

#: The engine's timings for a benchmark: heartbeats often enough to see a slot within a second, a queue grace
#: long enough that a task waiting behind a busy slot is never taken for lost, one result batch per wake-up.
TIMINGS = {
    "NAS_HEARTBEAT_SECONDS": "1",
    "NAS_HEARTBEAT_TTL": "6",
    "NAS_LEASE_SECONDS": "30",
    "NAS_REAP_SECONDS": "5",
    "NAS_QUEUE_GRACE": "600",
    "NAS_LOOP_WAIT": "0.5",
    "NAS_SOFT_SHUTDOWN_SECONDS": "0",
}


#: What this process sets for itself as well as for its children (the rest of ``env`` is inherited).
OWN = ("REDIS_URL", "NAS_STATE_DIR", "DJANGO_SETTINGS_MODULE", "DEBUG")


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


class Transcript:
    """The file-like ``out`` of a :class:`Supervisor`: keeps every child's lines and copies them to a log."""

    def __init__(self, path: Path) -> None:
        self.lines: list[str] = []
        self._file = path.open("a", buffering=1)
        self._lock = threading.Lock()

    def write(self, text: str) -> None:
        with self._lock:
            self.lines.extend(text.splitlines())
            self._file.write(text)

    def flush(self) -> None:
        self._file.flush()

    def isatty(self) -> bool:
        return False

    def wait_for(self, name: str, needle: str, timeout: float) -> None:
        """Until a line of child ``name`` contains ``needle``; RuntimeError with its last lines if it never does."""
        deadline, seen = time.monotonic() + timeout, 0
        while time.monotonic() < deadline:
            lines = self.lines
            for line in lines[seen:]:
                if line.startswith(f"{name} ") and needle in line:
                    return
            seen = len(lines)
            time.sleep(0.05)
        tail = "\n".join(line for line in self.lines if line.startswith(f"{name} "))[-3000:]
        raise RuntimeError(f"{name} never printed {needle!r} within {timeout:.0f} s:\n{tail}")


@dataclasses.dataclass(frozen=True)
class Node:
    """One evaluation worker process (``manage.py evalworker``): ``slots`` pool processes, each one evaluation
    at a time, at ``slowdown`` times the configured duration (``NAS_SIM_SLOWDOWN``)."""

    name: str
    slots: int = 1
    slowdown: float = 1.0


def equal_nodes(workers: int, per_process: int, prefix: str = "w") -> list[Node]:
    """``workers`` slots spread evenly over as few processes of at most ``per_process`` slots as possible."""
    processes = -(-workers // per_process)
    sizes = [workers // processes + (i < workers % processes) for i in range(processes)]
    return [Node(f"{prefix}{i}", slots=size) for i, size in enumerate(sizes)]


@dataclasses.dataclass
class Run:
    """One finished search as a benchmark sees it."""

    search_id: int
    status: str
    wall: float  #: seconds from launch() to the search being seen finished, measured here
    summary: dict[str, Any]  #: ``webapp.searches.accounting.summary`` of the search's stats
    individuals: int

    @property
    def engine_wall(self) -> float:
        return self.summary["wall"]


class Stack:
    """Redis, a migrated SQLite database and a control worker (unless ``control=False``); evaluation workers
    per measurement."""

    def __init__(self, timings: dict[str, str] | None = None, keep: bool = False, control: bool = True) -> None:
        self.timings = {**TIMINGS, **(timings or {})}
        self.control = control
        self.keep = keep
        self.folder = Path(tempfile.mkdtemp(prefix="nas-bench-"))
        self.transcript = Transcript(self.folder / "processes.log")
        self.base = Supervisor(out=self.transcript, colour=False)
        self._pools = itertools.count()
        self.env: dict[str, str] = {}

    # --- up and down -------------------------------------------------------------------------------------------

    def __enter__(self) -> Stack:
        # SIGTERM (a killed terminal, `timeout`) unwinds like Ctrl-C, through the same `finally`; SIGINT is set
        # too, since a shell starts background jobs with it ignored.
        signal.signal(signal.SIGTERM, _interrupt)
        signal.signal(signal.SIGINT, _interrupt)
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        server = embedded_redis(self.folder)
        redis = self.base.start("redis", server.argv(), stop_last=True)
        server.wait_ready(redis.process)
        self.env = {
            **os.environ, **self.timings,
            "REDIS_URL": server.url, "NAS_STATE_DIR": str(self.folder), "NAS_NO_BOOTSTRAP": "1",
            "DJANGO_SETTINGS_MODULE": "webapp.settings.local", "DEBUG": "0", "PYTHONUNBUFFERED": "1",
        }
        # This process is the web side: it creates and launches searches, reads their results.
        os.environ.update({name: self.env[name] for name in (*self.timings, *OWN)})
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        if not self.control:
            return
        self.base.start("control", self._manage("controlworker", "--concurrency", "1", "--node", "bench-control"),
                        env=self.env)
        self.transcript.wait_for("control", "ready.", timeout=120)

    def close(self) -> None:
        """Stop every process this stack started and delete its folder (kept with ``keep``)."""
        self.base.stop_all(grace=10)
        with contextlib.suppress(Exception):
            from django.db import connections

            connections.close_all()
        if self.keep:
            print(f"(the stack's folder, with processes.log, is kept: {self.folder})", file=sys.stderr)
        else:
            shutil.rmtree(self.folder, ignore_errors=True)

    @staticmethod
    def _manage(*args: str) -> list[str]:
        return [sys.executable, str(ROOT / "manage.py"), *args]

    # --- evaluation workers ------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def workers(self, nodes: Sequence[Node], timeout: float = 180, pool: str | None = None) -> Iterator[str]:
        """Start ``nodes`` on a fresh pool queue, wait until every slot announced itself; yields the pool name.
        A fresh pool per measurement: slots of the previous one that are still expiring never count. ``pool``
        names an existing one instead (other workers take over a running search's queue)."""
        pool = pool or f"eval.bench{next(self._pools)}"
        supervisor = Supervisor(out=self.transcript, colour=False)
        try:
            for node in nodes:
                env = {**self.env, "NAS_SIM_SLOWDOWN": str(node.slowdown)}
                argv = self._manage("evalworker", "--device", "cpu", "--slots", str(node.slots), "--pool", pool,
                                    "--node", node.name, "--loglevel", "WARNING")
                supervisor.start(node.name, argv, env=env)
            self.wait_slots(pool, sum(node.slots for node in nodes), timeout, {node.name for node in nodes})
            yield pool
        finally:
            supervisor.stop_all(grace=10)

    def wait_slots(self, pool: str, count: int, timeout: float, nodes: set[str] | None = None) -> None:
        """Until ``count`` slots of ``pool`` (of ``nodes`` only, when given) announce themselves."""
        from webapp.messaging import transport

        def live() -> int:
            return sum(1 for slot in transport.live_slots(pool) if nodes is None or slot.get("node") in nodes)

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if live() >= count:
                return
            time.sleep(0.2)
        tail = "\n".join(self.transcript.lines[-40:])
        raise RuntimeError(f"only {len(transport.live_slots(pool))} of {count} slots of pool {pool} announced "
                           f"themselves within {timeout:.0f} s:\n{tail}")

    # --- searches ----------------------------------------------------------------------------------------------

    def run_search(self, name: str, config: dict[str, Any], timeout: float = 3600, poll: float = 0.05) -> Run:
        """Create and launch a search, wait until it ends; its wall time and the engine's accounting."""
        from django.contrib.auth import get_user_model

        from webapp.searches import accounting
        from webapp.services import lifecycle
        from webapp.searches.models import Search

        owner, _ = get_user_model().objects.get_or_create(username="bench")
        search = lifecycle.create_search(owner, name, config)
        started = time.perf_counter()
        lifecycle.launch(search)
        deadline = time.monotonic() + timeout
        final = (Search.Status.FINISHED, Search.Status.FAILED, Search.Status.STOPPED)
        while True:
            status = Search.objects.filter(pk=search.pk).values_list("status", flat=True).get()
            if status in final:
                break
            if time.monotonic() > deadline:
                lifecycle.stop(Search.objects.get(pk=search.pk))
                raise TimeoutError(f"search {name} did not finish within {timeout:.0f} s")
            time.sleep(poll)
        wall = time.perf_counter() - started
        search.refresh_from_db()
        return Run(search.pk, status, wall, accounting.summary(search.stats), search.individuals.count())


def main_guard(main: Callable[[], None]) -> None:
    """Run a benchmark's ``main``; on Ctrl-C or SIGTERM (the stack already stopped) one line, exit code 130."""
    try:
        main()
    except KeyboardInterrupt:
        print("interrupted: every process the benchmark started is stopped", file=sys.stderr)
        raise SystemExit(130) from None


def simulated_config(pool: str, strategy: str, params: dict[str, Any], *, duration: float,
                     distribution: str = "fixed", sigma: float = 0.5, space: str = "pelee",
                     seed: int = 0) -> dict[str, Any]:
    """A search whose evaluations sleep (``evaluation.mode = simulated``) on the workers of ``pool``."""
    return {
        "space": {"name": space},
        "strategy": {"name": strategy, "seed": seed, "params": params},
        "dataset": "synthetic",
        "training": {"epochs": 1},
        "evaluation": {"mode": "simulated", "duration": duration, "distribution": distribution, "sigma": sigma},
        "pool": pool,
    }
