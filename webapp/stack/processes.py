"""Run several child processes as one: each in its own process group, its output prefixed and coloured,
and all of them stopped together (SIGTERM, then SIGKILL to the whole group after a grace period).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
from typing import IO

PR_SET_PDEATHSIG = 1
COLOURS = ("36", "35", "33", "32", "34", "31", "96", "95", "93", "92")


@dataclasses.dataclass
class Child:
    name: str
    process: subprocess.Popen
    colour: str
    pump: threading.Thread
    stop_last: bool = False  #: stopped only after every other child (a server the others talk to)


class Supervisor:
    """Starts children, copies their output to ``out`` line by line, and stops every one of them."""

    def __init__(self, out: IO[str] | None = None, colour: bool | None = None) -> None:
        self.out = out or sys.stdout
        self.colour = self.out.isatty() if colour is None else colour
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
        # A new session: Ctrl-C in the terminal reaches only us, and we stop the children in order.
        process = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        colour = COLOURS[len(self.children) % len(COLOURS)]
        self._width = max(self._width, len(name))
        pump = threading.Thread(target=self._pump, args=(name, process, colour), daemon=True)
        child = Child(name, process, colour, pump, stop_last)
        self.children.append(child)
        pump.start()
        self.say(name, f"started (pid {process.pid}): {' '.join(argv[:3])} ...", colour)
        return child

    def _pump(self, name: str, process: subprocess.Popen, colour: str) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.say(name, line, colour)

    def exited(self) -> Child | None:
        """The first child that has exited, if any."""
        for child in self.children:
            if child.process.poll() is not None:
                return child
        return None

    def stop_all(self, grace: float = 15.0) -> None:
        """Stop every child (those marked ``stop_last`` after the others); SIGKILL what outlives ``grace``."""
        self._stop([child for child in self.children if not child.stop_last], grace)
        self._stop([child for child in self.children if child.stop_last], grace)

    def _stop(self, children: list[Child], grace: float) -> None:
        for child in children:
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
            self.say(child.name, f"stopped (exit code {child.process.returncode})", child.colour)


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM when the supervisor dies, even by SIGKILL (Linux only)."""
    name = ctypes.util.find_library("c")
    if name and hasattr(os, "getppid"):
        try:
            ctypes.CDLL(name, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        except (OSError, AttributeError):
            pass


def _signal_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass
