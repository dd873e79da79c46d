"""A real gang worker (``evalworker --device cpu,cpu --gang auto``) pulls a message only while its host has room
(``webapp.worker.gang_tap``): with both its devices held, a message waits in its queue; once they are free it is
taken (here a malformed one, which the guard refuses). The tap closes within a check (1 s) and the end of a wait
for a message already asked of Redis (kombu's ``brpop_timeout``, 1 s)."""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest
import redis

from tests.conftest import ProcessLog, manage, manage_env
from webapp.messaging import dispatch

pytestmark = pytest.mark.integration

QUEUE = "eval.taptest"  # its own pool: no other test's worker takes the message


def test_a_full_gang_worker_leaves_the_message_in_its_queue_until_its_devices_free(celery_app, redis_url, tmp_path):
    env = manage_env(redis_url, tmp_path, NAS_SOFT_SHUTDOWN_SECONDS="0")
    worker = ProcessLog(manage("evalworker", "--device", "cpu,cpu", "--gang", "auto", "--node", "tapnode",
                               "--pool", QUEUE), env)
    client = redis.Redis.from_url(redis_url)
    try:
        worker.wait_for("ready.", timeout=120)
        worker.wait_for("gang worker tapnode: room for 2 more candidate(s)", timeout=60)
        ledger = Path(tempfile.gettempdir()) / f"nas-gang-tapnode-{worker.process.pid}"
        claims = [ledger / f"device.{index}" for index in range(2)]
        for claim in claims:
            claim.write_text(str(os.getpid()))  # a live process holds both devices
        worker.wait_for("gang worker tapnode: room for 0 more candidate(s) (0 free device(s)", timeout=60)
        time.sleep(1.5)  # a wait for a message asked before the tap closed ends in Redis within 1 s (brpop_timeout)
        celery_app.send_task(dispatch.EVALUATE_BATCH, args=[{"not": "a packet"}, ""], queue=QUEUE)
        time.sleep(3)  # three checks of the tap: a worker that pulled regardless would have taken it by now
        assert client.llen(QUEUE) == 1, (sorted(client.keys("*")), worker.text[-3000:])
        for claim in claims:
            claim.unlink()
        worker.wait_for("rejected task message", timeout=60)  # taken once its devices are free
        assert client.llen(QUEUE) == 0
    finally:
        worker.terminate()
