"""A packet the loop sends again (``first``: a candidate a gang worker handed back, a lost or never-sent one) is
pulled before the packets queued before it, through Celery's Redis transport as a worker consumes (kombu's
``BRPOP`` over the queue's priority lists), on the real Redis; the others keep the order they were sent in."""
from __future__ import annotations

import pytest
from kombu import Queue

from webapp.messaging import dispatch

QUEUE = "eval.prioritytest"  # no worker consumes it


@pytest.fixture
def pulled(celery_app):
    """The task ids of the messages in ``QUEUE``, in the order a consumer takes them."""
    def take(count: int) -> list[str]:
        seen: list[str] = []
        with celery_app.connection_for_read() as connection:
            with connection.Consumer([Queue(QUEUE, routing_key=QUEUE)], accept=["json"],
                                     callbacks=[lambda body, message: (seen.append(message.headers["id"]),
                                                                       message.ack())]):
                for _ in range(count):
                    connection.drain_events(timeout=10)
        return seen

    with celery_app.connection_for_write() as connection:
        connection.default_channel.queue_purge(QUEUE)
    yield take


def test_a_packet_sent_again_is_pulled_before_the_ones_queued(pulled):
    send = dispatch.sender(dispatch.EVALUATE_BATCH)
    send({"packet": 1}, "sig", "new-1", QUEUE)
    send({"packet": 2}, "sig", "new-2", QUEUE)
    send({"packet": 3}, "sig", "again-3", QUEUE, first=True)
    send({"packet": 4}, "sig", "new-4", QUEUE)
    send({"packet": 5}, "sig", "again-5", QUEUE, True)
    assert pulled(5) == ["again-3", "again-5", "new-1", "new-2", "new-4"]
