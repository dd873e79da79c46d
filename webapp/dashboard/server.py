"""The web process: several daphne processes serving one listening socket, each started again if it dies.

One daphne process runs its Python on one core at a time (the GIL): every page, API call and websocket of
every viewer shares that core. :func:`serve` binds the port once and starts ``workers`` daphne processes that
all accept on that socket (daphne's ``--fd``): the kernel hands each new connection to one of them, so that
many cores serve pages. Websockets work from any of them, since their groups live in Redis (the Channels
layer), and so do sessions, the login throttle and the snapshot cache (the database and Redis).

A daphne process that dies is started again, after a pause that doubles (1 s up to a minute) while it keeps
dying within seconds of its start; each restart is said on stdout. SIGTERM or SIGINT stops them all: SIGTERM,
then SIGKILL for any still running after ``grace`` seconds.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import time

from webapp.settings.env import env_int

#: A process that ran at least this long before it died was healthy: its next restart waits the least again.
HEALTHY_SECONDS = 10.0
FIRST_PAUSE, LONGEST_PAUSE = 1.0, 60.0
PR_SET_PDEATHSIG = 1


def default_workers() -> int:
    """``NAS_WEB_WORKERS``, else one per core up to four (each process holds ~150 MB)."""
    return env_int("NAS_WEB_WORKERS", max(1, min(os.cpu_count() or 1, 4)))


def listen(host: str, port: int, backlog: int = 1024) -> socket.socket:
    """A listening IPv4 socket that child processes inherit (daphne adopts an IPv4 descriptor only)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    sock.set_inheritable(True)
    return sock


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when this process dies, even by SIGKILL (Linux; elsewhere nothing)."""
    name = ctypes.util.find_library("c")
    if name:
        try:
            ctypes.CDLL(name, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        except (OSError, AttributeError):
            pass


@dataclasses.dataclass
class Worker:
    """One daphne process and when it may be started again."""

    number: int
    process: subprocess.Popen | None = None
    started: float = 0.0
    pause: float = FIRST_PAUSE
    restart_at: float = 0.0


class WebServer:
    def __init__(self, sock: socket.socket, workers: int, daphne_args: list[str], application: str,
                 out=None) -> None:
        self.sock = sock
        self.workers = [Worker(i) for i in range(workers)]
        self.daphne_args = daphne_args
        self.application = application
        self.out = out or sys.stdout
        self.stopping = False

    def say(self, text: str) -> None:
        self.out.write(f"web: {text}\n")
        self.out.flush()

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "daphne", "--fd", str(self.sock.fileno()), *self.daphne_args, self.application]

    def start(self, worker: Worker) -> None:
        worker.process = subprocess.Popen(self.argv(), pass_fds=(self.sock.fileno(),), stdin=subprocess.DEVNULL,
                                          preexec_fn=_die_with_parent)
        worker.started = time.monotonic()

    def check(self) -> None:
        """Start again each process that died, once its pause is over."""
        now = time.monotonic()
        for worker in self.workers:
            process = worker.process
            if process is not None and process.poll() is not None:
                # Quick deaths in a row wait longer each time; a process that ran a while waits the least.
                worker.pause = FIRST_PAUSE if now - worker.started >= HEALTHY_SECONDS else min(
                    worker.pause * 2, LONGEST_PAUSE)
                worker.restart_at = now + worker.pause
                self.say(f"daphne {worker.number} (pid {process.pid}) exited with code {process.returncode}; "
                         f"starting it again in {worker.pause:.0f} s")
                worker.process = None
            if worker.process is None and now >= worker.restart_at:
                self.start(worker)

    def stop(self, grace: float) -> None:
        running = [w.process for w in self.workers if w.process is not None and w.process.poll() is None]
        for process in running:
            process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in running:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def run(self, grace: float = 10.0) -> None:
        def stop(*_: object) -> None:
            self.stopping = True

        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        host, port = self.sock.getsockname()[:2]
        self.say(f"{len(self.workers)} daphne processes on http://{host}:{port}/ (one socket)")
        try:
            while not self.stopping:
                self.check()
                time.sleep(0.2)
        finally:
            self.stop(grace)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.sock.close()
