"""``manage.py evalworker``: device and Redis options, with errors that say what to do."""
from __future__ import annotations

import subprocess

import pytest

from tests.conftest import ProcessLog, manage, manage_env
from webapp.settings.env import redis_tls
from webapp.stack.evalnode import resolve_devices
from webapp.stack.tasks import ping

pytestmark = pytest.mark.integration


def test_devices_are_checked_before_anything_starts():
    assert resolve_devices("all") == ["cpu"]  # no GPU here: the CPU
    assert resolve_devices("cpu") == ["cpu"]
    for spec, message in (("gpu", "must be cpu, cuda:N"), ("cpu,cpu", "names a device twice"),
                          ("cuda:3", "no CUDA device is visible"), (",", "must name a device")):
        with pytest.raises(ValueError, match=message):
            resolve_devices(spec)


def test_redis_tls_options_only_for_rediss():
    assert redis_tls("redis://host:6379/0") is None
    options = redis_tls("rediss://:pw@host:6380/0", "/etc/ca.pem")
    assert options["ssl_ca_certs"] == "/etc/ca.pem" and int(options["ssl_cert_reqs"]) == 2  # CERT_REQUIRED


def test_an_unreachable_redis_is_one_clear_line(tmp_path):
    env = manage_env("redis://127.0.0.1:9/0", tmp_path)
    run = subprocess.run(manage("evalworker", "--redis", "redis://:secret@127.0.0.1:9/0"), env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "--redis redis://:***@127.0.0.1:9/0 is not reachable" in run.stderr
    assert "secret" not in run.stderr and "Traceback" not in run.stderr


def test_device_all_with_redis_flag_serves_the_pool(celery_app, redis_url, tmp_path):
    env = manage_env("redis://127.0.0.1:9/0", tmp_path)  # the environment points nowhere: the flag wins
    worker = ProcessLog(manage("evalworker", "--device", "all", "--redis", redis_url, "--node", "flagged"), env)
    try:
        worker.wait_for("ready.", timeout=60)
        answer = ping.apply_async(args=[{"via": "flag"}], queue="eval.flagged.cpu").get(timeout=30)
        assert answer["echo"] == {"via": "flag"} and answer["device"] == "cpu"
    finally:
        worker.stop()
