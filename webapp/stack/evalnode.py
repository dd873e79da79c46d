"""One host's evaluation workers: which devices ``--device`` names, and one supervised worker per device when
it names several (``--device all`` on a multi-GPU host); a worker that dies is restarted with back-off, alone."""
from __future__ import annotations

import re
import signal
import threading
from collections.abc import Callable

from webapp.stack.backoff import RestartPolicy
from webapp.stack.devices import cuda_device_count, device_error
from webapp.stack.processes import Supervisor

DEVICE = re.compile(r"^(cpu|cuda:\d+)$")


def resolve_devices(spec: str) -> list[str]:
    """``cpu``, ``cuda:N``, a comma-separated list of them, or ``all`` (every visible GPU, else the CPU).
    ValueError with a clear message for anything that does not exist here."""
    if spec == "all":
        count = cuda_device_count()
        return [f"cuda:{index}" for index in range(count)] or ["cpu"]
    devices = [part.strip() for part in spec.split(",") if part.strip()]
    if not devices:
        raise ValueError("--device must name a device: cpu, cuda:N, a list of them, or all")
    for device in devices:
        if not DEVICE.match(device):
            raise ValueError(f"--device must be cpu, cuda:N, a comma-separated list of them, or all (got {device!r})")
        problem = device_error(device)
        if problem:
            raise ValueError(problem)
    if len(set(devices)) != len(devices):
        raise ValueError(f"--device names a device twice ({spec})")
    return devices


def supervise(devices: list[str], argv_for: Callable[[str], list[str]], policy: RestartPolicy | None = None) -> int:
    """Run one worker process per device until Ctrl-C / SIGTERM, restarting each one that dies (the others go on
    evaluating); then stop them all."""
    supervisor = Supervisor(policy=policy)
    stopping = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stopping.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for device in devices:
            supervisor.start("eval-" + device.replace(":", ""), argv_for(device))
        while not stopping.wait(0.5):
            supervisor.tend()
        return 0
    finally:
        supervisor.stop_all()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
