"""``manage.py evalworker``: device and Redis options, with errors that say what to do."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest
import redis
from celery import Celery

from nas.spaces import space_from_config
from tests.conftest import ROOT, ProcessLog, RedisProcess, manage, manage_env
from webapp.messaging import signing as packets, transport
from webapp.settings.env import redis_tls
from webapp.stack.evalnode import resolve_devices
from webapp.stack.management.commands.evalworker import slot_threads
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


@pytest.mark.parametrize("pool", ["control", "gpu", "eval queue", ""])
def test_a_worker_serves_evaluation_pools_only(tmp_path, pool):
    """A worker pulling from the control queue would run search loops' messages as evaluations: refused."""
    run = subprocess.run(manage("evalworker", "--pool", pool), env=manage_env("redis://127.0.0.1:9/0", tmp_path),
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "--pool must be eval, or eval.<name>" in run.stderr
    assert "Traceback" not in run.stderr


def test_device_all_with_redis_flag_serves_the_pool(celery_app, redis_url, tmp_path):
    # The environment points nowhere: the flag wins. An idle worker stops at once (no 10 s soft shutdown).
    env = manage_env("redis://127.0.0.1:9/0", tmp_path, NAS_SOFT_SHUTDOWN_SECONDS="0")
    worker = ProcessLog(manage("evalworker", "--device", "all", "--redis", redis_url, "--node", "flagged"), env)
    try:
        worker.wait_for("ready.", timeout=60)
        answer = ping.apply_async(args=[{"via": "flag"}], queue="eval.flagged.cpu").get(timeout=30)
        assert answer["echo"] == {"via": "flag"} and answer["device"] == "cpu"
    finally:
        worker.stop()


def test_device_list_supervisor_restarts_a_dead_worker_alone_and_stops_on_sigterm():
    """``evalworker --device a,b``: one supervised worker per device; kill -9 of one restarts that one only (here
    the workers are stand-ins: this host has one device, and ``supervise`` runs whatever it is given)."""
    script = ("import sys; from webapp.stack.evalnode import supervise; "
              "sys.exit(supervise(['cpu', 'cuda:0'], lambda device: ['sleep', '300']))")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    node = ProcessLog([sys.executable, "-c", script], env)

    def pids(name: str) -> list[int]:
        return [int(p) for p in re.findall(rf"^{name}\s*\| started \(pid (\d+)\)", node.text, re.M)]

    try:
        node.wait_for("eval-cuda0 | started", timeout=60)
        cpu, gpu = pids("eval-cpu")[0], pids("eval-cuda0")[0]
        os.kill(cpu, signal.SIGKILL)
        node.wait_for("eval-cpu   | exited with exit code -9 (SIGKILL); restarting in 1 s", timeout=60)
        deadline = time.monotonic() + 60
        while len(pids("eval-cpu")) < 2:
            assert time.monotonic() < deadline, node.text
            time.sleep(0.1)
        assert pids("eval-cuda0") == [gpu] and psutil.Process(gpu).is_running()
        family = psutil.Process(node.process.pid).children(recursive=True)
        node.process.send_signal(signal.SIGTERM)
        assert node.process.wait(timeout=60) == 0
        _, alive = psutil.wait_procs(family, timeout=20)
        assert alive == []
    finally:
        node.stop()


def test_sigterm_stops_an_evaluating_worker_whose_redis_is_gone(tmp_path):
    """Today's regression: the worker waited for its evaluation (Celery's warm shutdown), whose Redis calls each
    retried for a minute; SIGTERM took minutes (250 s measured, with a 30 s evaluation). Now: the soft shutdown
    (NAS_SOFT_SHUTDOWN_SECONDS, 10 s by default; 2 s here, the same path 8 s sooner), then the evaluation is
    cancelled and the worker exits."""
    server = RedisProcess(tmp_path / "own-redis")
    worker = ProcessLog(manage("evalworker", "--device", "cpu", "--node", "doomed"),
                        manage_env(server.url, tmp_path, NAS_SOFT_SHUTDOWN_SECONDS="2"))
    try:
        worker.wait_for("ready.", timeout=120)
        space = {"name": "chain", "max_layers": 4}
        individual = {"search": 1, "individual": 1, "number": 0, "key": "k", "genome":
                      space_from_config(space).sample(np.random.default_rng(0)), "space": space, "dataset": "digits",
                      "training": {"epochs": 1}, "evaluation": {"mode": "simulated", "duration": 3600.0}}
        probe = Celery("probe", broker=server.url, set_as_current=False)
        probe.conf.update(task_serializer="json", accept_content=["json"])
        probe.send_task("webapp.worker.tasks.evaluate_batch", args=list(packets.build([individual])), queue="eval")
        probe.close()
        reader = redis.Redis.from_url(server.url)
        deadline = time.monotonic() + 120
        while not reader.llen(transport.results_key(1)):  # its "started" message: the evaluation runs
            assert time.monotonic() < deadline, worker.text
            time.sleep(0.1)
        reader.close()
        family = psutil.Process(worker.process.pid).children(recursive=True)
        assert family, "the worker's pool process"
        server.stop()
        worker.process.send_signal(signal.SIGTERM)
        try:
            worker.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"still running 60 s after SIGTERM:\n{worker.text[-3000:]}") from None
        _, alive = psutil.wait_procs(family, timeout=20)
        assert alive == [], "the pool process outlived its worker"
        assert "Soft Shutdown" in worker.text
    finally:
        worker.stop()
        if server.process.poll() is None:
            server.stop()


def test_cpu_slots_share_the_cores_instead_of_each_taking_all_of_them():
    """Two slots each running PyTorch's default (one thread per core) ran twice as many threads as cores: a
    weight search's evaluation took 3.3x longer on two slots than on one (benchmarks/results/neuroevolution.md)."""
    cores = len(os.sched_getaffinity(0))
    assert slot_threads("cpu", 2, None, {}) == max(1, cores // 2)
    assert slot_threads("cpu", 4 * cores, None, {}) == 1
    assert slot_threads("cpu", 2, 3, {"OMP_NUM_THREADS": "1"}) == 3  # --threads wins
    assert slot_threads("cpu", 2, None, {"OMP_NUM_THREADS": "1"}) is None  # the user's own setting stands
    assert slot_threads("cuda:0", 2, None, {}) is None  # a GPU slot keeps PyTorch's default


def test_a_two_slot_cpu_worker_announces_its_threads(celery_app, redis_url, tmp_path):
    worker = ProcessLog(manage("evalworker", "--device", "cpu", "--slots", "2", "--threads", "1", "--node",
                               "threaded", "--pool", "eval.threads"),
                        manage_env(redis_url, tmp_path, NAS_SOFT_SHUTDOWN_SECONDS="0"))  # idle: stop at once
    try:
        worker.wait_for("ready.", timeout=120)
        reader = redis.Redis.from_url(redis_url)
        deadline = time.monotonic() + 60
        while len(keys := list(reader.scan_iter(match="nas:slot:threaded:*"))) < 2:
            assert time.monotonic() < deadline, worker.text
            time.sleep(0.2)
        announced = [json.loads(reader.get(key)) for key in keys]
        reader.close()
        assert [s["threads"] for s in announced] == [1, 1]
    finally:
        worker.stop()


def test_threads_below_one_are_refused_in_one_line(tmp_path):
    run = subprocess.run(manage("evalworker", "--threads", "0"), env=manage_env("redis://127.0.0.1:9/0", tmp_path),
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "--threads must be at least 1 (got 0)" in run.stderr
    assert "Traceback" not in run.stderr
