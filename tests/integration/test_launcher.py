"""``manage.py up`` as a user runs it: the address is printed, the page answers, Ctrl-C leaves nothing behind."""
import http.cookiejar
import re
import signal
import socket
import urllib.parse
import urllib.request

import psutil
import pytest

from tests.conftest import ProcessLog, manage, manage_env
from webapp.stack.launcher import port_is_free
from webapp.stack.redis_server import free_port

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def busy_port():
    """A port someone else already listens on: the launcher must move to the next one and say so."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    while not port_is_free("127.0.0.1", port + 1):  # the launcher's fallback must be free for the test
        sock.close()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
    yield port
    sock.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory, busy_port):
    state = tmp_path_factory.mktemp("state")
    env = manage_env("", state, NAS_ADMIN_PASSWORD="", DJANGO_SETTINGS_MODULE="webapp.settings.local")
    env.pop("REDIS_URL")
    launcher = ProcessLog(manage("up", "--port", str(busy_port), "--devices", "cpu"), env)
    line = launcher.wait_for("Dashboard: http://", timeout=120)
    launcher.url = re.search(r"(http://\S+)", line).group(1)
    launcher.wait_for("press Ctrl-C to stop everything", timeout=30)  # the banner's last line: the password is above it
    launcher.state = state
    yield launcher
    launcher.stop()


def test_prints_the_address_and_the_first_password(stack):
    assert stack.url.startswith("http://127.0.0.1:")
    assert re.search(r"Sign in as 'admin' with password: \S{12,}", stack.text)


def test_a_busy_port_is_skipped_and_reported(stack, busy_port):
    assert f"port {busy_port} is busy; using port {busy_port + 1} instead" in stack.text
    assert stack.url == f"http://127.0.0.1:{busy_port + 1}/"


def test_serves_the_home_page_with_redis_reachable(stack):
    with urllib.request.urlopen(stack.url, timeout=10) as response:
        page = response.read().decode()
    assert "Distributed evolutionary neural architecture search" in page
    assert "reachable" not in page  # the system's details are for staff: sign in as the printed admin
    password = re.search(r"Sign in as 'admin' with password: (\S+)", stack.text).group(1)
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    form = browser.open(stack.url + "accounts/login/", timeout=10).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form).group(1)
    fields = {"csrfmiddlewaretoken": token, "username": "admin", "password": password, "next": "/"}
    page = browser.open(stack.url + "accounts/login/", urllib.parse.urlencode(fields).encode(), timeout=10).read().decode()
    assert "reachable" in page and "unreachable" not in page


def test_starts_redis_web_control_and_one_eval_worker(stack):
    for name in ("redis", "web", "control", "eval-cpu"):
        assert re.search(rf"^{re.escape(name)}\s*\| started \(pid \d+\)", stack.text, re.M), name
    stack.wait_for("eval-cpu@", timeout=60)


def test_ctrl_c_stops_every_process_and_frees_the_port(stack):
    stack.wait_for("control@", timeout=60)
    root = psutil.Process(stack.process.pid)
    family = root.children(recursive=True)
    assert len(family) >= 4  # redis, web, control (+ pool), eval (+ pool)
    root.send_signal(signal.SIGINT)
    assert stack.process.wait(timeout=90) == 0
    gone, alive = psutil.wait_procs(family, timeout=10)
    assert alive == [], f"left running: {[p.pid for p in alive]}"
    port = int(stack.url.rsplit(":", 1)[1].strip("/"))
    assert port_is_free("127.0.0.1", port)
    assert not (stack.state / "redis.url").exists()


def test_unreachable_redis_url_is_one_clear_line_and_changes_nothing(tmp_path):
    url = f"redis://127.0.0.1:{free_port()}/0"
    run = ProcessLog(manage("up", "--devices", "cpu"), manage_env(url, tmp_path, DJANGO_SETTINGS_MODULE="webapp.settings.local"))
    assert run.process.wait(timeout=60) != 0
    run.stop()
    assert f"REDIS_URL={url} is not reachable" in run.text
    assert "Traceback" not in run.text
    assert not (tmp_path / "db.sqlite3").exists()


def test_kill_9_of_up_leaves_nothing_running_within_seconds(tmp_path):
    env = manage_env("", tmp_path, NAS_ADMIN_PASSWORD="x", DJANGO_SETTINGS_MODULE="webapp.settings.local")
    env.pop("REDIS_URL")
    launcher = ProcessLog(manage("up", "--port", str(free_port()), "--devices", "cpu"), env)
    try:
        launcher.wait_for("Dashboard: http://", timeout=120)
        launcher.wait_for("eval-cpu@", timeout=60)
        family = psutil.Process(launcher.process.pid).children(recursive=True)
        assert len(family) >= 4
        launcher.process.send_signal(signal.SIGKILL)  # no chance to stop anything itself
        # Every child got SIGTERM from the kernel (PR_SET_PDEATHSIG), Redis included: the workers must not then
        # wait on the dead Redis while they shut down.
        gone, alive = psutil.wait_procs(family, timeout=20)
        assert alive == [], f"left running 20 s after kill -9: {[' '.join(p.cmdline()[1:4]) for p in alive]}"
    finally:
        launcher.stop()
