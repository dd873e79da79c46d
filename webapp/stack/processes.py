"""Run several child processes as one: each in its own process group, its output prefixed and coloured, a child
that dies restarted with back-off (:mod:`webapp.stack.backoff`), and all of them stopped together (SIGTERM,
then SIGKILL to the whole group after a grace period).
"""
from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
from typing import IO

from evaluators.lifetime import die_with_parent
from webapp.stack.backoff import Backoff, RestartPolicy

COLOURS = ("36", "35", "33", "32", "34", "31", "96", "95", "93", "92")


@dataclasses.dataclass
class Child:
    name: str
    argv: list[str]
    env: dict[str, str] | None
    colour: str
    backoff: Backoff
    stop_last: bool = False  #: stopped only after every other child (a server the others talk to)
    process: subprocess.Popen | None = None
    pump: threading.Thread | None = None
    started: float = 0.0  #: time.monotonic() of the last start
    restart_at: float | None = None  #: set while the child is dead and waits for its restart

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


def describe_exit(code: int) -> str:
    """``exit code 3``, or ``exit code -9 (SIGKILL)`` for a child killed by a signal."""
    if code < 0:
        try:
            return f"exit code {code} ({signal.Signals(-code).name})"
        except ValueError:
            pass
    return f"exit code {code}"


class Supervisor:
    """Starts children, copies their output to ``out`` line by line, restarts those that die (:meth:`tend`),
    and stops every one of them."""

    def __init__(self, out: IO[str] | None = None, colour: bool | None = None,
                 policy: RestartPolicy | None = None) -> None:
        self.out = out or sys.stdout
        self.colour = self.out.isatty() if colour is None else colour
        self.policy = policy or RestartPolicy()
        self.children: list[Child] = []
        self._lock = threading.Lock()
        self._width = 8

    def say(self, name: str, line: str, colour: str = "1") -> None:
        label = f"{name:<{self._width}} |"
        if self.colour:
            label = f"\033[{colour}m{label}\033[0m"
        with self._lock:
            self.out.write(f"{label} {line.rstrip()}\n")
            self.out.flush()

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None, stop_last: bool = False) -> Child:
        colour = COLOURS[len(self.children) % len(COLOURS)]
        self._width = max(self._width, len(name))
        child = Child(name, list(argv), env, colour, Backoff(self.policy), stop_last)
        self.children.append(child)
        self._spawn(child)
        return child

    def _spawn(self, child: Child) -> None:
        # A new session: Ctrl-C in the terminal reaches only us, and we stop the children in order.
        child.process = subprocess.Popen(
            child.argv,
            env=child.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        child.started = time.monotonic()
        child.restart_at = None
        child.pump = threading.Thread(target=self._pump, args=(child.name, child.process, child.colour), daemon=True)
        child.pump.start()
        self.say(child.name, f"started (pid {child.process.pid}): {' '.join(child.argv[:3])} ...", child.colour)

    def _pump(self, name: str, process: subprocess.Popen, colour: str) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.say(name, line, colour)

    def exited(self) -> Child | None:
        """The first child that has exited, if any."""
        for child in self.children:
            if child.process is not None and child.process.poll() is not None:
                return child
        return None

    def tend(self) -> None:
        """Schedule the restart of each child found dead, and restart those whose back-off is over; call it
        every fraction of a second from the supervising loop."""
        now = time.monotonic()
        for child in self.children:
            if child.restart_at is None and not child.running:
                code = child.process.returncode
                # What is left of its group (Celery's pool processes) must not outlive it and serve on.
                _signal_group(child.process, signal.SIGKILL)
                delay = child.backoff.next_delay(ran_for=now - child.started)
                child.restart_at = now + delay
                in_a_row = child.backoff.quick_deaths
                again = f", {in_a_row} times in a row" if in_a_row > 1 else ""
                self.say(child.name, f"exited with {describe_exit(code)}{again}; restarting in {delay:g} s",
                         child.colour)
            elif child.restart_at is not None and now >= child.restart_at:
                self.say(child.name, "restarting", child.colour)
                self._spawn(child)

    def stop_all(self, grace: float = 15.0) -> None:
        """Stop every child (those marked ``stop_last`` after the others); SIGKILL what outlives ``grace``."""
        self._stop([child for child in self.children if not child.stop_last], grace)
        self._stop([child for child in self.children if child.stop_last], grace)

    def _stop(self, children: list[Child], grace: float) -> None:
        children = [child for child in children if child.process is not None]
        for child in children:
            child.restart_at = None
            _signal_group(child.process, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for child in children:
            try:
                child.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.say(child.name, f"did not stop within {grace:.0f} s: killing it", child.colour)
        for child in children:
            # Also reap grandchildren (Celery's pool processes) that outlived their parent.
            _signal_group(child.process, signal.SIGKILL)
            child.process.wait()
            child.pump.join(timeout=2)
            self.say(child.name, f"stopped ({describe_exit(child.process.returncode)})", child.colour)



def _signal_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
