"""Websockets against the real web server (``manage.py web``) and the real Redis channel layer: the origin check
on a real handshake, 500 viewers connecting at once who all get every event and leave no member behind, and a
Redis restart that closes sockets politely (4013) instead of failing handshakes with a 500.

Nothing here depends on speed: every wait is for a condition, with a generous timeout."""
from __future__ import annotations

import json
import resource
import subprocess
import sys

import pytest
import redis
from django.conf import settings as django_settings
from django.test import Client

from tests.conftest import ROOT, ProcessLog, RedisProcess, manage, manage_env
from tests.engine.conftest import wait_until
from webapp.searches import broadcast
from webapp.settings.env import redis_channel_layer

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

VIEWERS = 500
#: Seconds: long enough for a busy 2-core machine; a healthy run takes a few.
PATIENCE = 300


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_web(env: dict[str, str]) -> tuple[str, ProcessLog]:
    """The deployed web server (``manage.py web``), one process, on a free port: ``host:port`` and its process
    once it answers."""
    port = free_port()
    server = ProcessLog(manage("web", "--workers", "1", "--port", str(port), "--no-access-log"), env)
    try:
        server.wait_for(f"Uvicorn running on http://127.0.0.1:{port}", timeout=120)
    except BaseException:  # a fixture that fails to start has no teardown: leave no server behind
        server.stop()
        raise
    return f"127.0.0.1:{port}", server


class Viewers:
    """The websocket clients of ``tests.dashboard.ws_viewers``, in their own process (see there why)."""

    def __init__(self, address: str, search_id: int, cookie: str) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "tests.dashboard.ws_viewers", address, str(search_id),
                                         cookie], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def __call__(self, op: str, **args) -> dict:
        self.process.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()  # every command has its own timeout in the viewers' process
        assert line, f"the viewers' process ended (exit status {self.process.poll()})"
        return json.loads(line)

    def open(self, count: int = 1, origin: str | None = None) -> dict:
        return self("open", count=count, origin=origin, timeout=PATIENCE)

    def stop(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=PATIENCE)


@pytest.fixture(scope="module")
def web(django_db_setup, redis_url):
    """One web server for the module, on the test database and the session's Redis."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))  # 500 sockets and more
    address, server = start_web(manage_env(redis_url, django_settings.STATE_DIR, NAS_USE_TEST_DB="1"))
    yield address
    server.stop()


@pytest.fixture
def redis_layer(settings, redis_url):
    """This process publishes through the same Redis channel layer as the web server."""
    settings.CHANNEL_LAYERS = {"default": redis_channel_layer(redis_url)}


def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def group_key(search_id: int) -> str:
    return f"asgi:group:{broadcast.group_name(search_id)}"


def publish(search_id: int, count: int) -> list[int]:
    """``count`` events through the engine's ``broadcast.notify`` (logged, then sent to the group)."""
    return [broadcast.notify(search_id, "test.tick", {"tick": i}).seq for i in range(count)]


def test_a_real_handshake_from_another_origin_is_refused(web, users, search, redis_layer):
    viewers = Viewers(web, search.pk, session_cookie(users["owner"]))
    try:
        own = viewers.open()
        assert len(own["opened"]) == 1, own
        port = web.split(":")[1]
        for origin in ("http://127.0.0.1:9999", f"https://{web}", f"http://localhost:{port}"):
            other = viewers.open(origin=origin)
            assert not other["opened"] and len(other["failed"]) == 1, (origin, other)
            assert "WebSocket connection upgrade failed [403]" in next(iter(other["failed"])), (origin, other)
        viewers("close", ids=own["opened"], timeout=PATIENCE)
    finally:
        viewers.stop()


def test_500_viewers_connecting_at_once_all_get_every_event(web, users, search, redis_layer, redis_url):
    store = redis.Redis.from_url(redis_url)
    store.delete(group_key(search.pk))
    viewers = Viewers(web, search.pk, session_cookie(users["owner"]))
    try:
        opened = viewers.open(VIEWERS)
        assert len(opened["opened"]) == VIEWERS, f"handshakes that failed: {opened['failed']}"
        ids = opened["opened"]
        # A consumer joins the search's group before it accepts: every open socket is a member now.
        assert store.zcard(group_key(search.pk)) == VIEWERS

        sent = publish(search.pk, 5)
        missing = viewers("expect", ids=ids, seqs=sent, timeout=PATIENCE)["missing"]
        assert not missing, f"{len(missing)} of {VIEWERS} viewers lack some of the events {sent}"

        codes = viewers("close", ids=ids, timeout=PATIENCE)["codes"]  # all leave at once
        assert set(codes.values()) == {1000}
        wait_until(lambda: store.zcard(group_key(search.pk)) == 0, PATIENCE,
                   message="every member leaves the group (none left behind)")
    finally:
        viewers.stop()


def test_a_redis_restart_closes_sockets_politely_and_reconnects_work(users, search, settings, tmp_path):
    """With its Redis gone, open sockets and new handshakes are closed with 4013 (try again later), never a
    500; once Redis is back on its port, a reconnect works and gets the events."""
    private = RedisProcess(tmp_path / "redis")
    address, server = start_web(manage_env(private.url, settings.STATE_DIR, NAS_USE_TEST_DB="1"))
    settings.CHANNEL_LAYERS = {"default": redis_channel_layer(private.url)}
    viewers = Viewers(address, search.pk, session_cookie(users["owner"]))
    try:
        watching = viewers.open()["opened"]
        assert len(watching) == 1
        private.stop()
        assert viewers("closed", ids=watching, timeout=PATIENCE)["codes"] == {str(watching[0]): 4013}

        during = viewers.open()
        assert len(during["opened"]) == 1, f"a handshake failed while Redis was away: {during['failed']}"
        assert viewers("closed", ids=during["opened"], timeout=PATIENCE)["codes"] == {str(during["opened"][0]): 4013}

        private.start()

        def reconnected() -> list[int]:
            """As the page does: a new socket, kept if it answers a resume instead of closing."""
            attempt = viewers.open()
            assert attempt["opened"], f"a handshake failed after the restart: {attempt['failed']}"
            viewers("resume", ids=attempt["opened"], after=10**9)
            answer = viewers("answered", ids=attempt["opened"], timeout=PATIENCE)
            return attempt["opened"] if answer["answered"] and not answer["closed"] else []

        viewer = wait_until(reconnected, PATIENCE, interval=1, message="a socket that stays open after the restart")
        sent = publish(search.pk, 2)
        assert not viewers("expect", ids=viewer, seqs=sent, timeout=PATIENCE)["missing"]
    finally:
        viewers.stop()
        server.stop()
        if private.process.poll() is None:
            private.stop()
