"""One rule for every child process this project starts: it dies with the process that started it.

Linux's ``PR_SET_PDEATHSIG`` makes the kernel send a signal to a child when its parent dies, even by SIGKILL,
so no evaluation rank, web process or worker outlives what supervises it. Standard library only: the
launcher, the web server and the gang's ranks all use it (elsewhere than Linux it does nothing).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM, parent: int | None = None) -> None:
    """Ask the kernel for ``sig`` when this process's parent dies. Call it in the child (a ``preexec_fn``, or
    first thing in a child's ``main``). With ``parent`` (the pid that started it) a child whose parent already
    died before the request took effect exits at once instead of running orphaned."""
    name = ctypes.util.find_library("c")
    if name:
        try:
            ctypes.CDLL(name, use_errno=True).prctl(PR_SET_PDEATHSIG, sig)
        except (OSError, AttributeError):
            pass
    if parent is not None and os.getppid() != parent:
        os._exit(1)
