"""A task crosses the real Redis to a real evaluation worker process and its JSON result comes back."""
import json
import uuid

import pytest
import redis

from webapp.stack.tasks import ping

pytestmark = pytest.mark.integration


def test_ping_round_trip_through_the_eval_queue(celery_app, eval_worker):
    payload = {"hello": "world", "n": 3}
    result = ping.apply_async(args=[payload], queue="eval")
    answer = result.get(timeout=30)
    assert answer["echo"] == payload
    assert answer["device"] == "cpu"
    assert answer["pid"] != eval_worker.process.pid  # ran in the worker's pool process, not in ours
    json.dumps(answer)  # a JSON result, not a pickle


def test_pinned_queue_reaches_the_worker(celery_app, eval_worker):
    result = ping.apply_async(args=[{"pinned": True}], queue="eval.testnode.cpu")
    assert result.get(timeout=30)["echo"] == {"pinned": True}


def test_a_pickled_message_is_refused_and_runs_nothing(celery_app, eval_worker, redis_url):
    marker = uuid.uuid4().hex
    refused = ping.apply_async(args=[{"marker": marker}], queue="eval", serializer="pickle")
    # A JSON task sent after it runs; the pickled one never does, and the worker says why.
    assert ping.apply_async(args=[{"after": True}], queue="eval").get(timeout=30)["echo"] == {"after": True}
    eval_worker.wait_for("pickle", timeout=10)
    assert refused.state == "PENDING"
    client = redis.Redis.from_url(redis_url)
    assert client.get(f"celery-task-meta-{refused.id}") is None
