"""Told when a search ends, on the real stack (issue 34): a control worker and an evaluation worker, webhook
receivers on the loopback. Each ended search (finished, stopped, and finished again after a resume) is one signed
call to its owner's webhook; a receiver that answers 500 twice gets the same call on the third try (Celery's
retry with a one-second backoff, set for the test); the loop never waits for either."""
from __future__ import annotations

import json

import pytest

from tests.engine.conftest import launched, owner, simulated_config, wait_until
from tests.webhook_receiver import Receiver
from webapp.notifications import payload, user_hooks
from webapp.notifications.models import Delivery
from webapp.searches.models import Search
from webapp.services import lifecycle

pytestmark = pytest.mark.integration
SECRET = "the-test-receivers-shared-secret"
#: Retries a second apart (Celery's retry_backoff and its maximum): no sleeps in the test, no minute-long waits.
QUICK_RETRIES = {"NAS_WEBHOOK_BACKOFF": "1", "NAS_WEBHOOK_BACKOFF_MAX": "1", "NAS_WEBHOOK_RETRIES": "4"}


@pytest.fixture
def receivers():
    made = {"user": Receiver(), "flaky": Receiver([500, 500])}
    yield made
    for receiver in made.values():
        receiver.close()


def ended_calls(receiver: Receiver) -> list[dict]:
    """The calls a receiver took, each checked for its signature, parsed."""
    parsed = []
    for call in receiver.calls:
        assert payload.verify(SECRET, call["body"], call["headers"]["x-nas-signature"]), call
        assert call["headers"]["x-nas-event"] == "search.ended"
        body = json.loads(call["body"])
        assert body["delivery"] == call["headers"]["x-nas-delivery"]
        parsed.append(body)
    return parsed


def all_sent(count: int) -> bool:
    return Delivery.objects.filter(state=Delivery.State.SENT).count() == count


def test_one_signed_call_per_ended_search_and_a_flaky_receiver_gets_it_on_the_third_try(stack, receivers):
    user_hooks.set_secret(owner(), SECRET)
    user_hooks.set_webhook(owner(), receivers["user"].url("/mine"))
    stack.control(wait=False, **QUICK_RETRIES)
    stack.evaluator("hook-a")

    first = launched("told", simulated_config(evaluations=3, duration=0.1, population=3)
                     | {"notify": {"webhook": receivers["flaky"].url("/flaky")}})
    wait_until(lambda: all_sent(2), 120, message="both calls of the first search sent")
    first.refresh_from_db()
    assert first.status == Search.Status.FINISHED

    # the flaky receiver: 500, 500, then 200 for the same call (same bytes, same delivery key)
    flaky = ended_calls(receivers["flaky"])
    assert [c["answered"] for c in receivers["flaky"].calls] == [500, 500, 200]
    assert len({c["body"] for c in receivers["flaky"].calls}) == 1
    assert flaky[0]["search"] == first.pk and flaky[0]["state"] == "finished"
    assert flaky[0]["evaluations_done"] == 3 and flaky[0]["best_value"] == first.best_fitness
    assert Delivery.objects.get(url=receivers["flaky"].url("/flaky")).attempts == 3

    # a second search stopped mid-way, then resumed until it finished: two ends, two calls
    second = launched("stopped then resumed", simulated_config(evaluations=6, duration=0.5, population=3))
    wait_until(lambda: Search.objects.get(pk=second.pk).evaluations_done >= 1, 120, message="a first result")
    lifecycle.stop(Search.objects.get(pk=second.pk))
    wait_until(lambda: Search.objects.get(pk=second.pk).status == Search.Status.STOPPED, 120, message="stopped")
    wait_until(lambda: all_sent(3), 60, message="the stop's call sent")
    lifecycle.resume(Search.objects.get(pk=second.pk))
    wait_until(lambda: all_sent(4), 120, message="the second end's call sent")

    mine = ended_calls(receivers["user"])
    assert [(c["search"], c["state"]) for c in mine] == [(first.pk, "finished"), (second.pk, "stopped"),
                                                         (second.pk, "finished")]
    assert len({c["delivery"] for c in mine}) == 3  # each end its own key; no end announced twice
    assert all(c["url"].endswith(f"/searches/{c['search']}/") for c in mine)
    assert Delivery.objects.count() == 4 and not Delivery.objects.exclude(state=Delivery.State.SENT).exists()
