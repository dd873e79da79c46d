"""``manage.py up`` when one of its processes dies: that one is restarted (the embedded Redis on the same port and
files), the others go on, and only Ctrl-C stops everything. A second run of the same state folder keeps the Redis
port and the keys; every child holds the state folder's keys, never the development key of the source."""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import signal
import socket
import stat
import subprocess
import time
import http.cookiejar
import urllib.parse
import urllib.request

import psutil
import pytest
from celery import Celery

from tests.conftest import ProcessLog, manage, manage_env
from webapp.stack.redis_server import free_port, ping_error

pytestmark = pytest.mark.integration

#: The signing key every local installation had before it got keys of its own (it is in the repository's history).
OLD_PUBLIC_KEY = "insecure-development-key-never-used-in-production"


def start_up(state, port: int | None = None) -> ProcessLog:
    env = manage_env("", state, NAS_ADMIN_PASSWORD="x", DJANGO_SETTINGS_MODULE="webapp.settings.local")
    env.pop("REDIS_URL")
    for name in ("NAS_TASK_KEY", "SECRET_KEY", "NAS_REDIS_PORT"):
        env.pop(name, None)
    launcher = ProcessLog(manage("up", "--port", str(port or free_port()), "--devices", "cpu"), env)
    line = launcher.wait_for("Dashboard: http://", timeout=180)
    launcher.url = re.search(r"(http://\S+)", line).group(1)
    launcher.state = state
    launcher.wait_for("eval-cpu@", timeout=120)
    launcher.wait_for("control@", timeout=120)
    return launcher


def pids(launcher: ProcessLog, name: str) -> list[int]:
    """Every pid ``up`` started ``name`` with, in order."""
    return [int(pid) for pid in re.findall(rf"^{re.escape(name)}\s*\| started \(pid (\d+)\)", launcher.text, re.M)]


def wait_for_count(launcher: ProcessLog, pattern: str, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while len(re.findall(pattern, launcher.text, re.M)) < count:
        assert launcher.process.poll() is None, f"`up` exited; output:\n{launcher.text}"
        assert time.monotonic() < deadline, f"never saw {count} x {pattern!r}; output:\n{launcher.text}"
        time.sleep(0.1)


def home_page(url: str, password: str = "x") -> str:
    """The home page as the admin sees it (the system's details are for staff): signed in with the password
    the test gave ``up`` (``NAS_ADMIN_PASSWORD``)."""
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    form = browser.open(url + "accounts/login/", timeout=20).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form).group(1)
    fields = {"csrfmiddlewaretoken": token, "username": "admin", "password": password, "next": "/"}
    return browser.open(url + "accounts/login/", urllib.parse.urlencode(fields).encode(), timeout=20).read().decode()


def signed(data: dict, key: str) -> str:
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    return hmac.new(key.encode(), canonical, hashlib.sha256).hexdigest()


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    launcher = start_up(tmp_path_factory.mktemp("state"))
    yield launcher
    launcher.stop()


def test_kill_9_of_the_control_worker_restarts_it_and_the_rest_go_on(stack):
    first = pids(stack, "control")[-1]
    others = {name: pids(stack, name)[-1] for name in ("web", "eval-cpu", "redis")}
    ready = len(re.findall(r"^control\s*\|.*control@\S+ ready\.", stack.text, re.M))
    os.kill(first, signal.SIGKILL)
    stack.wait_for("control  | exited with exit code -9 (SIGKILL); restarting in 1 s", timeout=60)
    wait_for_count(stack, r"^control\s*\|.*control@\S+ ready\.", ready + 1, timeout=120)
    assert pids(stack, "control")[-1] != first and psutil.Process(pids(stack, "control")[-1]).is_running()
    assert {name: pids(stack, name)[-1] for name in others} == others  # nobody else was restarted
    assert "stopping every process" not in stack.text
    assert "Distributed evolutionary neural architecture search" in home_page(stack.url)


def test_kill_9_of_the_embedded_redis_restarts_it_on_the_same_port_and_workers_reconnect(stack):
    url = (stack.state / "redis.url").read_text().strip()
    first = pids(stack, "redis")[-1]
    os.kill(first, signal.SIGKILL)
    stack.wait_for("redis    | exited with exit code -9 (SIGKILL); restarting in 1 s", timeout=60)
    wait_for_count(stack, r"^redis\s*\| started \(pid", 2, timeout=60)
    assert (stack.state / "redis.url").read_text().strip() == url
    deadline = time.monotonic() + 60
    while ping_error(url) is not None:
        assert time.monotonic() < deadline, f"no Redis on {url} after its restart"
        time.sleep(0.2)
    # The evaluation worker started before the crash serves again on the same URL.
    probe = Celery("probe", broker=url, backend=url, set_as_current=False)
    probe.conf.update(task_serializer="json", accept_content=["json"], result_serializer="json")
    try:
        answer = probe.send_task("webapp.stack.tasks.ping", args=[{"after": "restart"}], queue="eval").get(timeout=120)
    finally:
        probe.close()
    assert answer["echo"] == {"after": "restart"}
    assert "stopping every process" not in stack.text
    page = home_page(stack.url)
    assert "reachable" in page and "unreachable" not in page


def test_the_keys_are_the_state_folders_own_and_every_child_holds_them(stack):
    keys = {}
    for name in ("task_key", "secret_key"):
        path = stack.state / name
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, name
        keys[name] = path.read_text().strip()
        assert len(keys[name]) >= 40 and keys[name] != OLD_PUBLIC_KEY
    assert keys["task_key"] != keys["secret_key"]
    for name in ("web", "control", "eval-cpu"):
        environ = psutil.Process(pids(stack, name)[-1]).environ()
        assert environ["NAS_TASK_KEY"] == keys["task_key"], name
        assert environ["SECRET_KEY"] == keys["secret_key"], name


def test_a_packet_signed_with_the_old_public_key_is_refused_by_the_worker_up_started(stack):
    url = (stack.state / "redis.url").read_text().strip()
    task_key = (stack.state / "task_key").read_text().strip()
    packet = {"operation_type": 0, "ind_len": 1, "ind_set": [{}], "termination_flag": False}
    probe = Celery("probe", broker=url, set_as_current=False)
    probe.conf.update(task_serializer="json", accept_content=["json"])
    try:
        forged = probe.send_task("webapp.worker.tasks.evaluate_batch", args=[packet, signed(packet, OLD_PUBLIC_KEY)],
                                 queue="eval").id
        genuine = probe.send_task("webapp.worker.tasks.evaluate_batch", args=[packet, signed(packet, task_key)],
                                  queue="eval").id
    finally:
        probe.close()
    refused = stack.wait_for(f"rejected task message {forged}", timeout=120)
    assert "bad or missing signature" in refused
    # The installation's own key passes the signature check (and this empty individual is refused for itself).
    checked = stack.wait_for(f"rejected task message {genuine}", timeout=120)
    assert "individual 0 lacks" in checked


def test_ctrl_c_stops_and_a_second_run_keeps_the_redis_port_and_the_keys(stack):
    url = (stack.state / "redis.url").read_text().strip()
    keys = {name: (stack.state / name).read_text() for name in ("task_key", "secret_key")}
    stack.process.send_signal(signal.SIGINT)
    assert stack.process.wait(timeout=90) == 0
    assert (stack.state / "redis.port").read_text().strip() == url.rsplit(":", 1)[1].split("/")[0]
    again = start_up(stack.state)
    try:
        assert (stack.state / "redis.url").read_text().strip() == url
        assert f"started Redis {url}" in again.text
        assert {name: (stack.state / name).read_text() for name in keys} == keys
        assert psutil.Process(pids(again, "eval-cpu")[-1]).environ()["NAS_TASK_KEY"] == keys["task_key"].strip()
    finally:
        again.stop()


@pytest.mark.parametrize("chosen_by", ["state folder", "NAS_REDIS_PORT", "--redis-port"])
def test_a_redis_port_taken_by_another_program_is_one_clear_line(tmp_path, chosen_by):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        (tmp_path / "redis.port").write_text(f"{port if chosen_by == 'state folder' else free_port()}\n")
        env = manage_env("", tmp_path, DJANGO_SETTINGS_MODULE="webapp.settings.local")
        env.pop("REDIS_URL")
        env.pop("NAS_REDIS_PORT", None)
        argv = ["up", "--port", str(free_port()), "--devices", "cpu"]
        if chosen_by == "NAS_REDIS_PORT":
            env["NAS_REDIS_PORT"] = str(port)
        elif chosen_by == "--redis-port":
            argv += ["--redis-port", str(port)]
        run = ProcessLog(manage(*argv), env)
        try:
            refused = run.process.wait(timeout=120) != 0
        except subprocess.TimeoutExpired:
            refused = False  # it started instead: stopped here, never left running
        finally:
            run.stop()
    assert refused, run.text
    if chosen_by == "state folder":
        assert f"the embedded Redis's port {port} (remembered in {tmp_path / 'redis.port'}) is taken by another " \
               "program" in run.text
    else:  # the flag and the variable win over the remembered port
        assert f"--redis-port / NAS_REDIS_PORT {port} is taken by another program" in run.text
    assert "--redis-port PORT or NAS_REDIS_PORT=PORT" in run.text
    assert "Traceback" not in run.text
    assert not (tmp_path / "db.sqlite3").exists()
