"""The web process: several daphne processes behind one port, each started again if it dies.

One daphne process runs its Python on one core at a time (the GIL): every page, API call and websocket of
every viewer it serves shares that core. :class:`WebServer` listens on the port itself, accepts each
connection and hands it to its daphne processes in turn (over a Unix socket, ``SCM_RIGHTS``; each adopts it,
``webapp.dashboard.web_worker``), so that as many cores serve pages and each process holds as many
connections as the next. (Letting the processes accept on a shared socket themselves spread 20 keep-alive
connections 14 / 6 or 13 / 7 over two: the busier one's viewers waited twice as long. Node's cluster module
hands connections round-robin from its primary for the same reason.) Websockets work from any of them:
their groups live in Redis (the Channels layer), and so do sessions, the login throttle and the snapshots.

A daphne process that dies is started again, after a pause that doubles (1 s up to a minute) while it keeps
dying within seconds of its start; each restart is said on stdout, and meanwhile the others get its share of
new connections. SIGTERM or SIGINT stops them all: SIGTERM, then SIGKILL for any still running after
``grace`` seconds.
"""
from __future__ import annotations

import dataclasses
import itertools
import os
import selectors
import signal
import socket
import subprocess
import sys
import time

from evaluators.lifetime import die_with_parent
from webapp.settings.env import env_int

#: A process that ran at least this long before it died was healthy: its next restart waits the least again.
HEALTHY_SECONDS = 10.0
FIRST_PAUSE, LONGEST_PAUSE = 1.0, 60.0
#: How often the server looks for a process that died, when no connection comes.
CHECK_SECONDS = 0.2


def default_workers() -> int:
    """``NAS_WEB_WORKERS``, else one per core up to four (each process holds ~150 MB)."""
    return env_int("NAS_WEB_WORKERS", max(1, min(os.cpu_count() or 1, 4)))


def listen(host: str, port: int, backlog: int = 1024) -> socket.socket:
    """The listening IPv4 socket (daphne's processes adopt IPv4 connections)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    sock.setblocking(False)
    return sock



@dataclasses.dataclass
class Worker:
    """One daphne process, the Unix socket its connections go through, and when it may be started again."""

    number: int
    process: subprocess.Popen | None = None
    channel: socket.socket | None = None
    started: float = 0.0
    pause: float = FIRST_PAUSE
    restart_at: float = 0.0

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


class WebServer:
    def __init__(self, sock: socket.socket, workers: int, daphne_args: list[str], application: str,
                 out=None) -> None:
        self.sock = sock
        self.workers = [Worker(i) for i in range(workers)]
        self.turns = itertools.cycle(self.workers)
        self.daphne_args = daphne_args
        self.application = application
        self.out = out or sys.stdout
        self.stopping = False

    def say(self, text: str) -> None:
        self.out.write(f"web: {text}\n")
        self.out.flush()

    def start(self, worker: Worker) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [sys.executable, "-m", "webapp.dashboard.web_worker", "--fd", str(theirs.fileno()),
                *self.daphne_args, self.application]
        try:
            worker.process = subprocess.Popen(argv, pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                                              preexec_fn=die_with_parent)
        finally:
            theirs.close()
        ours.setblocking(False)
        worker.channel = ours
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
                worker.channel.close()
            if worker.process is None and now >= worker.restart_at:
                self.start(worker)

    def hand_over(self, connection: socket.socket) -> None:
        """Give an accepted connection to the next daphne process that takes it (none: it is closed)."""
        with connection:
            for _ in range(len(self.workers)):
                worker = next(self.turns)
                if not worker.alive:
                    continue
                try:
                    socket.send_fds(worker.channel, [b"c"], [connection.fileno()])
                    return
                except OSError:  # its queue is full or it just died: the next one
                    continue

    def accept(self) -> None:
        while True:
            try:
                connection, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:  # e.g. out of file descriptors: say so, and let the backlog wait
                self.say(f"could not accept a connection: {error}")
                return
            self.hand_over(connection)

    def stop(self, grace: float) -> None:
        running = [w.process for w in self.workers if w.alive]
        for process in running:
            process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in running:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for worker in self.workers:
            if worker.channel is not None:
                worker.channel.close()

    def run(self, grace: float = 10.0) -> None:
        def stop(*_: object) -> None:
            self.stopping = True

        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        host, port = self.sock.getsockname()[:2]
        self.say(f"{len(self.workers)} daphne processes on http://{host}:{port}/")
        selector = selectors.DefaultSelector()
        selector.register(self.sock, selectors.EVENT_READ)
        try:
            while not self.stopping:
                self.check()
                if selector.select(timeout=CHECK_SECONDS):
                    self.accept()
        finally:
            selector.close()
            self.stop(grace)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.sock.close()
