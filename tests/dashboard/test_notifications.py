"""Told when a search ends (issue 34): webhook addresses checked (http or https, no credentials) with a 400 that
changes nothing, the secret never shown back in full, one delivery per end (a resumed search that ends again owes
a new one), the payload signed and sent once, retried on a failure, never following a redirect."""
from __future__ import annotations

import json

import pytest

from tests.dashboard.conftest import CONFIG
from tests.webhook_receiver import Receiver
from webapp.notifications import outbox, payload, sender, user_hooks
from webapp.notifications.models import Delivery, UserHook
from webapp.searches.config import ConfigError, check_config
from webapp.searches.models import Search
from webapp.services import lifecycle

BAD = [
    ("file:///etc/passwd", "http or https"),
    ("ftp://example.org/hook", "http or https"),
    ("http://user:secret@example.org/hook", "credentials"),
    ("https://token@example.org/hook", "credentials"),
    ("javascript:alert(1)", "http or https"),
    ("http:///no-host", "host"),
    ("http://example.org:99999/", "not a URL"),
    ("http://exa mple.org/", "spaces"),
    (12, "http or https URL"),
]


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


def login(client, users, name="owner"):
    client.force_login(users[name])
    return client


@pytest.mark.django_db
@pytest.mark.parametrize("url,words", BAD)
def test_the_api_refuses_a_bad_webhook_with_400_and_keeps_the_one_saved(client, users, url, words):
    login(client, users)
    assert client.post("/api/notifications/", {"webhook": "https://good.example.org/h"},
                       content_type="application/json").status_code == 200
    response = client.post("/api/notifications/", {"webhook": url}, content_type="application/json")
    assert response.status_code == 400, response.content
    assert words in response.json()["error"] and response.json()["field"] == "webhook"
    assert UserHook.objects.get(user=users["owner"]).webhook == "https://good.example.org/h"


@pytest.mark.django_db
def test_a_bad_webhook_with_a_new_secret_changes_neither(client, users):
    login(client, users)
    response = client.post("/api/notifications/", {"webhook": "file:///x", "secret": "new"},
                           content_type="application/json")
    assert response.status_code == 400
    assert not UserHook.objects.filter(user=users["owner"]).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("url,words", BAD[:4])
def test_the_settings_page_refuses_a_bad_webhook_with_400_and_saves_nothing(client, users, url, words):
    login(client, users)
    response = client.post("/settings/notifications/", {"webhook": url, "save": "1"})
    assert response.status_code == 400 and words in response.content.decode()
    assert not UserHook.objects.filter(user=users["owner"]).exclude(webhook="").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("url,words", BAD[:4])
def test_a_search_whose_notify_webhook_is_bad_is_refused_and_not_created(client, users, url, words):
    with pytest.raises(ConfigError) as error:
        check_config({**CONFIG, "notify": {"webhook": url}})
    assert error.value.field == "notify.webhook" and words in str(error.value)
    login(client, users)
    response = client.post("/api/searches/", {"name": "n", "config": {**CONFIG, "notify": {"webhook": url}}},
                           content_type="application/json")
    assert response.status_code == 400 and response.json()["field"] == "notify.webhook"
    assert not Search.objects.exists()


def test_notify_is_checked_in_every_kind():
    assert check_config({**CONFIG, "notify": {"webhook": "https://h.example.org/x"}})["notify"] == \
        {"webhook": "https://h.example.org/x"}
    assert "notify" not in check_config(CONFIG)
    weights = {"kind": "weights", "network": {"kind": "mlp", "layers": [64, 10]},
               "weights": {"population": 4, "generations": 2}}
    assert check_config({**weights, "notify": {"webhook": "http://127.0.0.1:9/x"}})["notify"]["webhook"]
    for config in (CONFIG, weights):
        with pytest.raises(ConfigError, match="notify.webhook"):
            check_config({**config, "notify": {"webhook": "ftp://x/"}})
        with pytest.raises(ConfigError, match="notify.email"):
            check_config({**config, "notify": {"email": "a@b"}})


@pytest.mark.django_db
def test_the_secret_is_shown_in_full_once_then_only_its_end(client, users):
    login(client, users)
    made = client.post("/api/notifications/", {"secret": "new"}, content_type="application/json").json()
    secret = made["new_secret"]
    assert len(secret) >= 32 and made["secret"] == "…" + secret[-4:]
    shown = client.get("/api/notifications/").json()
    assert secret not in json.dumps(shown) and shown["secret_source"] == "own"
    assert secret not in client.get("/settings/notifications/").content.decode()
    assert client.post("/api/notifications/", {"secret": "short"},
                       content_type="application/json").status_code == 400
    assert user_hooks.secret_for(users["owner"].pk) == secret


@pytest.mark.django_db
def test_one_delivery_per_end_and_a_new_one_when_it_ends_again(users, django_capture_on_commit_callbacks):
    user_hooks.set_webhook(users["owner"], "https://same.example.org/h")
    config = {**CONFIG, "notify": {"webhook": "https://same.example.org/h"}}
    search = lifecycle.create_search(users["owner"], "s", config)
    search.status = Search.Status.FINISHED
    search.save()
    with django_capture_on_commit_callbacks(execute=False) as queued:
        first = outbox.search_ended(search, 7)
        again = outbox.search_ended(search, 7)  # the same end recorded twice: owed once
        later = outbox.search_ended(search, 12)  # resumed, ended again
    assert len(first) == 1 and again == [] and len(later) == 1  # one address: the search's and the owner's are one
    assert len(queued) == 3
    assert sorted(Delivery.objects.values_list("end_seq", flat=True)) == [7, 12]
    body = Delivery.objects.get(end_seq=7).payload
    assert body["delivery"] == f"search-{search.pk}-end-7" and body["state"] == "finished"
    assert body["url"].endswith(f"/searches/{search.pk}/") and body["kind"] == "architecture"
    assert {"best_value", "evaluations_done", "evaluations_failed", "started", "ended", "name", "reason"} <= set(body)


@pytest.mark.django_db
def test_no_address_owes_nothing(users):
    search = lifecycle.create_search(users["owner"], "s", CONFIG)
    assert outbox.search_ended(search, 3) == [] and not Delivery.objects.exists()


def owed(users, url: str) -> Delivery:
    search = lifecycle.create_search(users["owner"], "s", {**CONFIG, "notify": {"webhook": url}})
    user_hooks.set_secret(users["owner"], "a-shared-secret-of-the-test")
    return Delivery.objects.get(pk=outbox.search_ended(search, 5)[0])


@pytest.mark.django_db
def test_the_sender_signs_the_body_and_never_sends_twice(users, receiver):
    delivery = owed(users, receiver.url())
    assert sender.deliver(delivery.pk, last_try=False) == "sent"
    assert sender.deliver(delivery.pk, last_try=False) == "sent"  # a redelivered task: no second call
    (call,) = receiver.calls
    assert payload.verify("a-shared-secret-of-the-test", call["body"], call["headers"]["x-nas-signature"])
    assert call["headers"]["x-nas-delivery"] == delivery.key
    assert json.loads(call["body"]) == delivery.payload


@pytest.mark.django_db
def test_a_failed_call_raises_for_a_retry_and_the_last_one_is_recorded_failed(users, receiver):
    receiver.statuses = [500, 302]
    delivery = owed(users, receiver.url())
    with pytest.raises(sender.DeliveryFailed, match="HTTP 500"):
        sender.deliver(delivery.pk, last_try=False)
    assert sender.deliver(delivery.pk, last_try=True) == "failed"  # a redirect is not followed
    delivery.refresh_from_db()
    assert (delivery.attempts, delivery.last_error) == (2, "HTTP 302")
    assert [c["path"] for c in receiver.calls] == ["/hook", "/hook"]


@pytest.mark.django_db
def test_an_unreachable_receiver_is_a_failure_not_a_crash(users, receiver):
    url = receiver.url()
    receiver.close()
    delivery = owed(users, url)
    with pytest.raises(sender.DeliveryFailed, match="Error"):
        sender.deliver(delivery.pk, last_try=False)


@pytest.mark.django_db
def test_a_stop_with_no_loop_alive_is_an_end_announced_too(users, django_capture_on_commit_callbacks):
    user_hooks.set_webhook(users["owner"], "https://mine.example.org/h")
    search = lifecycle.create_search(users["owner"], "s", CONFIG)
    Search.objects.filter(pk=search.pk).update(status=Search.Status.RUNNING)
    search.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=False) as queued:
        lifecycle.stop(search)  # no lease held: stopped at once, here
    (delivery,) = Delivery.objects.all()
    assert delivery.payload["state"] == "stopped" and delivery.payload["reason"] == "stopped by its owner"
    assert len(queued) == 2  # the page's event and the call


@pytest.mark.django_db
def test_the_search_forms_take_a_webhook_and_refuse_a_bad_one_beside_the_field(client, users):
    from webapp.dashboard.architecture_form import SearchForm
    from webapp.dashboard.weights_form import WeightSearchForm

    search = lifecycle.create_search(users["owner"], "s", {**CONFIG, "notify": {"webhook": "https://a.example.org/"}})
    initial = SearchForm.initial_from(search.name, search.config)
    assert initial["webhook"] == "https://a.example.org/"
    for bad in ("ftp://x.example.org/", "https://u:p@x.example.org/"):
        form = SearchForm({**initial, "webhook": bad}, base=search.config, user=users["owner"])
        assert not form.is_valid() and "webhook" in form.errors, form.errors
    form = SearchForm({**initial, "webhook": "http://b.example.org/h"}, base=search.config, user=users["owner"])
    assert form.is_valid(), form.errors
    assert form.config["notify"] == {"webhook": "http://b.example.org/h"}
    weights = lifecycle.create_search(users["owner"], "w", {"kind": "weights", "weights": {"generations": 2}})
    initial = WeightSearchForm.initial_from(weights.name, weights.config)
    assert initial["webhook"] == ""
    form = WeightSearchForm({**initial, "webhook": "file:///etc/passwd"}, base=weights.config)
    assert not form.is_valid() and "webhook" in form.errors


def test_the_task_is_retried_by_celery_with_backoff_from_the_settings(settings):
    from webapp.notifications.tasks import send_webhook

    assert send_webhook.autoretry_for == (sender.DeliveryFailed,)
    assert send_webhook.max_retries == settings.NAS_WEBHOOK_RETRIES
    assert send_webhook.retry_backoff == settings.NAS_WEBHOOK_BACKOFF
    assert send_webhook.soft_time_limit < send_webhook.time_limit  # below the engine's default limits
    assert send_webhook.run("not an id") == "rejected"
