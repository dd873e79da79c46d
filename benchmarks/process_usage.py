"""What a benchmark's processes used, read from the operating system with psutil: CPU seconds of a process
tree, the whole machine's busy seconds, and how a web server's client connections spread over its processes."""
from __future__ import annotations

from dataclasses import dataclass, field


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` and every process under it."""
    import psutil

    total = 0.0
    root = psutil.Process(pid)
    for process in [root, *root.children(recursive=True)]:
        try:
            times = process.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


@dataclass
class Usage:
    """CPU seconds used during the measured seconds: by the web server, by the clients, by the machine."""

    web: float = 0.0
    clients: float = 0.0
    machine: float = 0.0
    spread: list[int] = field(default_factory=list)  #: the clients' connections held by each web process


def connections_per_process(pid: int, port: int) -> list[int]:
    """How many client connections each process of the web server holds (one process: one number)."""
    import psutil

    root = psutil.Process(pid)
    counts = []
    for process in [root, *root.children()]:
        try:
            held = [c for c in process.net_connections("tcp") if c.status == "ESTABLISHED" and c.laddr.port == port]
        except psutil.Error:
            continue
        if held or process.pid == pid and not root.children():
            counts.append(len(held))
    return sorted(counts, reverse=True)


def machine_busy() -> float:
    """Seconds the whole machine's CPUs have been busy (not idle, not waiting on I/O) since boot."""
    import psutil

    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)
