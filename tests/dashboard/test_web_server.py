"""``manage.py web``: several daphne processes behind one port, on the test database and the session's Redis.
Connections are spread evenly over them; pages and websockets are served (every viewer gets every event,
whichever process holds its socket); a daphne process killed with SIGKILL is started again, and SIGTERM stops
them all.

Nothing here depends on speed: every wait is for a condition, with a generous timeout."""
from __future__ import annotations

import os
import signal
import urllib.request

import psutil
import pytest
from django.conf import settings as django_settings
from django.urls import reverse

from tests.conftest import ProcessLog, manage, manage_env
from tests.dashboard.test_live_burst import PATIENCE, Viewers, free_port, publish, session_cookie
from tests.engine.conftest import wait_until
from webapp.settings.env import redis_channel_layer

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
WORKERS = 2


def daphnes(server: ProcessLog) -> list[psutil.Process]:
    """The server's live daphne processes."""
    return [child for child in psutil.Process(server.process.pid).children()
            if child.is_running() and child.status() != psutil.STATUS_ZOMBIE
            and "webapp.dashboard.web_worker" in child.cmdline()]


def answers(url: str, cookie: str = "") -> int:
    try:
        request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except OSError:
        return 0


@pytest.fixture
def web(redis_url):
    port = free_port()
    env = manage_env(redis_url, django_settings.STATE_DIR, NAS_USE_TEST_DB="1")
    server = ProcessLog(manage("web", "--workers", str(WORKERS), "--port", str(port)), env)
    server.wait_for(f"{WORKERS} daphne processes on http://127.0.0.1:{port}/", timeout=PATIENCE)
    base = f"http://127.0.0.1:{port}"
    wait_until(lambda: answers(f"{base}/accounts/login/") == 200, PATIENCE, message="the web server answers")
    yield base, server
    server.stop()


def test_pages_and_websockets_through_several_processes(web, users, search, settings):
    base, server = web
    assert len(daphnes(server)) == WORKERS
    cookie = session_cookie(users["owner"])
    # Each request on a new connection: whichever process accepts it serves the same.
    for url in [reverse("search-detail", args=[search.pk]), reverse("api-snapshot", args=[search.pk]),
                reverse("api-individuals", args=[search.pk])] * 5:
        assert answers(base + url, cookie) == 200, url

    settings.CHANNEL_LAYERS = {"default": redis_channel_layer(settings.REDIS_URL)}
    viewers = Viewers(base.split("//")[1], search.pk, cookie)
    try:
        opened = viewers.open(20)
        assert len(opened["opened"]) == 20, opened["failed"]
        sent = publish(search.pk, 3)
        assert not viewers("expect", ids=opened["opened"], seqs=sent, timeout=PATIENCE)["missing"]
        viewers("close", ids=opened["opened"], timeout=PATIENCE)
    finally:
        viewers.stop()


def test_keep_alive_connections_are_spread_evenly(web):
    """Each new connection goes to the next process: 20 browsers' connections, 10 in each of two."""
    import http.client

    base, server = web
    host, port = base.split("//")[1].split(":")
    clients = [http.client.HTTPConnection(host, int(port), timeout=60) for _ in range(10 * WORKERS)]
    try:
        for connection in clients:  # one after the other, each kept open
            connection.request("GET", "/accounts/login/")
            response = connection.getresponse()
            assert response.status == 200 and response.read()
        held = sorted(len([c for c in process.net_connections("tcp") if c.status == "ESTABLISHED"
                           and c.laddr.port == int(port)]) for process in daphnes(server))
        assert held == [10] * WORKERS
    finally:
        for connection in clients:
            connection.close()


def test_a_killed_process_is_started_again_and_sigterm_stops_them_all(web):
    base, server = web
    first = daphnes(server)
    victim = first[0]
    victim.send_signal(signal.SIGKILL)
    server.wait_for(f"(pid {victim.pid}) exited with code -9; starting it again", timeout=PATIENCE)
    wait_until(lambda: len(daphnes(server)) == WORKERS and victim.pid not in [p.pid for p in daphnes(server)],
               PATIENCE, message="a new daphne process in place of the killed one")
    wait_until(lambda: answers(f"{base}/accounts/login/") == 200, PATIENCE, message="the server still answers")

    children = daphnes(server)
    os.kill(server.process.pid, signal.SIGTERM)  # the server alone: it stops its children itself
    assert server.process.wait(timeout=PATIENCE) == 0
    gone, alive = psutil.wait_procs(children, timeout=PATIENCE)
    assert not alive
