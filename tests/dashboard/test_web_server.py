"""``manage.py web``: uvicorn processes on one port, on the test database and the session's Redis. Pages and
websockets are served by every process (every viewer gets every event, whichever process holds its socket); a
process killed with SIGKILL is started again, and SIGTERM stops them all; a busy port is said in one line;
behind a proxy (``--proxy-headers``) the client's address is the forwarded one; and two edges get a proper
answer: a static path that leads out of the static folders (404, nothing served) and a URL of 100 KB (414,
short; JSON under ``/api/``).

Nothing here depends on speed: every wait is for a condition, with a generous timeout."""
from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import urllib.error
import urllib.parse
import urllib.request

import psutil
import pytest
from django.conf import settings as django_settings
from django.urls import reverse

from tests.conftest import ProcessLog, manage, manage_env
from tests.dashboard.test_live_burst import PATIENCE, Viewers, free_port, publish, session_cookie
from tests.dashboard.test_login_throttle import address, login_cache  # noqa: F401 (a fixture)
from tests.engine.conftest import wait_until
from webapp.settings.env import redis_channel_layer

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
WORKERS = 2


def workers(server: ProcessLog) -> list[psutil.Process]:
    """The server's live worker processes (uvicorn spawns them; multiprocessing's resource tracker is not one)."""
    return [child for child in psutil.Process(server.process.pid).children()
            if child.is_running() and child.status() != psutil.STATUS_ZOMBIE
            and "spawn_main" in " ".join(child.cmdline())]


def answers(url: str, cookie: str = "") -> int:
    try:
        request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


def start(redis_url: str, *flags: str, **env: str) -> tuple[str, ProcessLog]:
    port = free_port()
    environment = manage_env(redis_url, django_settings.STATE_DIR, NAS_USE_TEST_DB="1", **env)
    server = ProcessLog(manage("web", "--workers", str(WORKERS), "--port", str(port), *flags), environment)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: answers(f"{base}/accounts/login/") == 200 or server.process.poll() is not None,
                   PATIENCE, message="the web server answers")
        assert server.process.poll() is None, server.text
    except BaseException:  # a fixture that fails to start has no teardown: leave no server behind
        server.stop()
        raise
    return base, server


@pytest.fixture
def web(redis_url):
    base, server = start(redis_url)
    yield base, server
    server.stop()


def raw_get(base: str, target: str) -> http.client.HTTPResponse:
    """GET ``target`` exactly as written (urllib would normalise it), on a connection of its own."""
    host, port = base.split("//")[1].split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    connection.request("GET", target)
    response = connection.getresponse()
    response.body = response.read()
    connection.close()
    return response


def ws_connections(process: psutil.Process, port: int) -> int:
    return len([c for c in process.net_connections("tcp") if c.status == "ESTABLISHED" and c.laddr.port == port])


def test_pages_and_websockets_from_every_process(web, users, search, settings):
    base, server = web
    assert len(workers(server)) == WORKERS
    cookie = session_cookie(users["owner"])
    # Each request on a new connection: whichever process accepts it serves the same.
    for url in [reverse("search-detail", args=[search.pk]), reverse("api-snapshot", args=[search.pk]),
                reverse("api-individuals", args=[search.pk])] * 5:
        assert answers(base + url, cookie) == 200, url

    settings.CHANNEL_LAYERS = {"default": redis_channel_layer(settings.REDIS_URL)}
    port = int(base.rsplit(":", 1)[1])
    viewers = Viewers(base.split("//")[1], search.pk, cookie)
    try:
        opened = []
        # The processes accept from one socket: open sockets until each process holds some (a few suffice).
        while len(opened) < 400 and not all(ws_connections(p, port) for p in workers(server)):
            batch = viewers.open(count=10)
            assert len(batch["opened"]) == 10, batch["failed"]
            opened += batch["opened"]
        assert all(ws_connections(p, port) for p in workers(server)), "a process holds no websocket"
        sent = publish(search.pk, 3)
        assert not viewers("expect", ids=opened, seqs=sent, timeout=PATIENCE)["missing"]
        viewers("close", ids=opened, timeout=PATIENCE)
    finally:
        viewers.stop()


def test_a_killed_process_is_started_again_and_sigterm_stops_them_all(web):
    base, server = web
    victim = workers(server)[0]
    victim.send_signal(signal.SIGKILL)
    server.wait_for(f"Child process [{victim.pid}] died", timeout=PATIENCE)
    wait_until(lambda: len(workers(server)) == WORKERS and victim.pid not in [p.pid for p in workers(server)],
               PATIENCE, message="a new process in place of the killed one")
    wait_until(lambda: answers(f"{base}/accounts/login/") == 200, PATIENCE, message="the server still answers")

    children = workers(server)
    os.kill(server.process.pid, signal.SIGTERM)  # the server alone: it stops its children itself
    assert server.process.wait(timeout=PATIENCE) == 0
    gone, alive = psutil.wait_procs(children, timeout=PATIENCE)
    assert not alive


def test_the_processes_die_with_the_server(web):
    """Killed outright (no chance to stop them), the server leaves no process serving its port."""
    base, server = web
    children = workers(server)
    os.kill(server.process.pid, signal.SIGKILL)
    gone, alive = psutil.wait_procs(children, timeout=PATIENCE)
    assert not alive


def test_a_busy_port_is_said_in_one_line(redis_url):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        env = manage_env(redis_url, django_settings.STATE_DIR, NAS_USE_TEST_DB="1")
        out = subprocess.run(manage("web", "--port", str(port)), env=env, capture_output=True, text=True,
                             timeout=PATIENCE)
    assert out.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in out.stderr and "Traceback" not in out.stderr, out.stderr


def sign_in(base: str, username: str, forwarded_for: str) -> int:
    """A failed sign-in through the real server, from the address ``forwarded_for`` as a proxy says; its status."""
    host, port = base.split("//")[1].split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    connection.request("GET", "/accounts/login/")
    page = connection.getresponse()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.read().decode()).group(1)
    cookie = page.getheader("Set-Cookie").split(";")[0]
    form = urllib.parse.urlencode({"username": username, "password": "wrong", "csrfmiddlewaretoken": token})
    connection.request("POST", "/accounts/login/", body=form, headers={
        "Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded", "X-Forwarded-For": forwarded_for})
    status = connection.getresponse().status
    connection.close()
    return status


def test_behind_a_proxy_the_forwarded_address_is_the_clients(redis_url, login_cache):  # noqa: F811
    base, server = start(redis_url, "--proxy-headers", NAS_LOGIN_ADDRESS_FAILURES="2")
    try:
        locked, other = address(), address()
        # The second failure from one address locks it (NAS_LOGIN_ADDRESS_FAILURES) ...
        assert [sign_in(base, f"guess-{i}", locked) for i in range(2)] == [200, 429]
        assert sign_in(base, "guess-2", other) == 200  # ... not another client behind the same proxy
    finally:
        server.stop()


def test_a_static_path_out_of_the_static_folders_is_a_404(web):
    base, _ = web
    assert raw_get(base, "/static/css/site.css").status == 200
    manage_py = (django_settings.BASE_DIR / "manage.py").read_bytes()
    for target in ("/static/..%2f..%2fmanage.py", "/static/..%2fmanage.py", "/static/%2e%2e/%2e%2e/manage.py"):
        response = raw_get(base, target)
        assert response.status == 404, (target, response.status)
        assert b"def main" not in response.body and manage_py not in response.body


def test_a_url_of_100_kb_is_414_with_a_short_answer(web):
    base, _ = web
    long = "a" * 100_000
    page = raw_get(base, f"/accounts/login/?q={long}")
    assert page.status == 414 and len(page.body) < 200 and page.getheader("Content-Type").startswith("text/plain")
    api = raw_get(base, f"/api/searches/?q={long}")
    assert api.status == 414 and len(api.body) < 200 and "URI too long" in json.loads(api.body)["error"]
    assert raw_get(base, "/accounts/login/?q=short").status == 200  # the server serves on
