"""Poison on an evaluation queue: envelopes and bodies that are not tasks the loop sent. Each is refused once,
logged and removed (recorded in the dead-letter list), and the same worker process goes on to run a search.
Before, a body that was a JSON string killed the worker with an unrecoverable error, at every start."""
from __future__ import annotations

import json
import uuid

import pytest

from tests.engine.conftest import assert_each_recorded_once, finished, launched, simulated_config, wait_until
from webapp.messaging import transport
from webapp.messaging.dispatch import EVALUATE_BATCH

pytestmark = pytest.mark.integration


def headers(**changes) -> dict:
    return {"lang": "py", "task": EVALUATE_BATCH, "id": uuid.uuid4().hex, "retries": 0, "timelimit": [None, None],
            "root_id": None, "parent_id": None, "argsrepr": "", "kwargsrepr": "", "origin": "poison", **changes}


#: (body, headers): every one of them is refused by the worker without harming it.
CORPUS = [
    ("hello", headers()),  # the body is a JSON string (the unrecoverable error of before)
    ([1, 2], headers()),
    ({"args": [], "kwargs": {}}, headers()),
    ([["a packet?"], "kwargs", {}], headers()),
    ([[], {}, "embed"], headers()),
    ([[], {}, {}], headers(id=5)),
    ([[], {}, {}], headers(id="")),
    ([[], {}, {}], headers(timelimit="soon")),
    ([[], {}, {}], headers(timelimit=[1, 2, 3])),
    ([[], {}, {}], headers(eta="not a date")),
    ([[], {}, {}], headers(expires=[])),
    ([[], {}, {}], headers(retries="many")),
    ([[], {}, {}], headers(shadow=42)),
    ([[{"operation_type": 0}, "sig"], {}, {}], headers()),  # readable, but not a signed packet
    ([["not a packet", "sig"], {}, {}], headers()),
    ([[], {"packet": [], "signature": 3}, {}], headers()),
]


def test_every_malformed_message_is_refused_once_and_the_worker_goes_on(stack, celery_app):
    worker = stack.evaluator("alpha")
    pid = worker.process.pid
    with celery_app.connection_for_write() as connection:
        producer = connection.Producer()
        for body, envelope in CORPUS:
            producer.publish(body, routing_key="eval", exchange="", headers=envelope, serializer="json")
        # A message whose headers are not even an object, and one that is not a task message at all.
        producer.publish([[], {}, {}], routing_key="eval", exchange="", headers={"task": ["x"], "id": "z"},
                         serializer="json")
        producer.publish("plain text", routing_key="eval", exchange="", serializer="json")
    expected = len(CORPUS) + 2
    records = wait_until(lambda: (lambda r: r if len(r) >= expected else None)(transport.dead_letters(100)),
                         60, message="every malformed message recorded")
    assert len(records) == expected, [r["reason"] for r in records]
    assert all(r["reason"] and r["time"] for r in records)
    # Nothing is left to come back: the queue and Celery's unacked messages hold none of them.
    wait_until(lambda: transport.client().llen("eval") == 0 and transport.client().hlen("unacked") == 0, 30,
               message="queue and unacked emptied")
    assert "Unrecoverable error" not in worker.text and worker.process.poll() is None

    # The same worker process runs a search afterwards.
    stack.control()
    search = finished(launched("after poison", simulated_config(evaluations=4, duration=0.1)).pk)
    assert_each_recorded_once(search, 4)
    assert worker.process.pid == pid and worker.process.poll() is None
    assert json.dumps(records)  # the records are plain JSON (the nodes page lists them)


def test_a_queue_item_that_is_not_a_message_at_all_is_refused_too(stack):
    """Raw bytes, JSON that is no envelope: refused, and the same worker runs a search afterwards."""
    worker = stack.evaluator("alpha")
    pid = worker.process.pid
    for item in (b"not json at all {", b"[1, 2, 3]", b'"a string"', b'{"body": 5}'):
        transport.client().lpush("eval", item)
    wait_until(lambda: transport.client().llen("eval") == 0, 30, message="queue emptied")
    wait_until(lambda: len(transport.dead_letters()) >= 4, 30, message="each recorded")
    stack.control()
    search = finished(launched("after raw items", simulated_config(evaluations=3, duration=0.1)).pk)
    assert_each_recorded_once(search, 3)
    assert "Unrecoverable error" not in worker.text
    assert worker.process.pid == pid and worker.process.poll() is None
