"""A weight search's page in Chromium follows the search's websocket (real Redis, a real daphne): a generation
published as the weight loop publishes it shows up without a reload and without a request to the page's JSON;
a status event changes the badge and the buttons; events published while the socket is down are caught up, and
when more were missed than one catch-up holds, the page re-fetches its snapshot (JSON) once."""
from __future__ import annotations

import threading

import pytest

from tests.browser.live_stack import sign_in, wait_until
from webapp.dashboard.consumers import CATCH_UP
from webapp.searches import broadcast
from webapp.searches.models import Search, WeightGeneration, WeightState
from webapp.services import lifecycle

pytestmark = [pytest.mark.browser, pytest.mark.integration]
CONFIG = {"kind": "weights", "network": {"kind": "mlp", "layers": [64, 32, 10]}, "weights": {"generations": 5}}


def row(number: int) -> dict:
    """A generation's row as ``webapp.control.weights_loop`` records and publishes it."""
    return {"number": number, "best": -0.5 + 0.1 * number, "mean": -1.0, "worst": -2.0,
            "validation_accuracy": 0.61 + 0.1 * number, "workers": 2, "evaluated": {"alpha": 8, "beta": 8},
            "traffic": {"bytes_up": 100, "bytes_down": 200, "bytes": 300, "model_bytes": 280, "weights_bytes": 6e5},
            "timings": {"evaluate": 0.2, "gather": 0.05, "gradient": 0.01, "update": 0.02, "total": 0.28}}


def publish(search: Search, kind: str, data: dict) -> None:
    """As the loop would, from another thread (Playwright's event loop runs in this one)."""
    if kind == "weights.generation":  # the loop records the row and the state in the event's transaction
        WeightGeneration.objects.create(search=search, **data)
        WeightState.objects.update_or_create(search=search, defaults={
            "generation": data["number"] + 1, "digest": "d", "data": b"x",
            "validation_accuracy": data["validation_accuracy"]})
    thread = threading.Thread(target=broadcast.notify, args=(search.pk, kind, data))
    thread.start()
    thread.join()


def open_page(page, web: str, owner, search: Search) -> tuple[list[str], list[str]]:
    """The search's page, live; the URLs it requests and the errors it raises, as lists that grow."""
    requested: list[str] = []
    errors: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    sign_in(page, web, owner)
    page.goto(f"{web}/searches/{search.pk}/")
    page.wait_for_function("() => document.getElementById('live-state').textContent === 'live'", timeout=60_000)
    return requested, errors


def text(page, selector: str) -> str:
    return page.locator(selector).inner_text()


def fitness_points(page) -> int:
    return page.evaluate("() => document.getElementById('chart-weights-fitness').data[0].x.length")


def test_a_generation_shows_up_live_without_polling(page, web, django_user_model):
    owner = django_user_model.objects.create_user(username="ada", password="a-long-password-1")
    search = lifecycle.create_search(owner, "es live", CONFIG)
    json_url = f"/api/searches/{search.pk}/weights/"
    requested, errors = open_page(page, web, owner, search)
    page.evaluate("() => { window.__noReload = 'still here'; }")
    assert text(page, "#progress-text") == "0/5" and page.locator("#edit-button").is_visible()

    # Launched (as lifecycle.launch announces it): the badge, the buttons and the reason follow.
    Search.objects.filter(pk=search.pk).update(status="running")
    publish(search, "search.status", {"status": "running", "reason": "launched"})
    wait_until(lambda: text(page, "#search-status") == "running", 60, message="the status badge")
    assert page.locator("#stop-button").is_enabled() and page.locator("#launch-button").is_disabled()
    assert not page.locator("#edit-button").is_visible() and text(page, "#status-reason") == "launched"

    # The first generation: its progress, accuracy and points, with no request to the JSON before or after.
    assert not [url for url in requested if json_url in url], "the page polled its JSON"
    publish(search, "weights.generation", row(0))
    wait_until(lambda: text(page, "#progress-text") == "1/5", 60, message="the generation shown")
    assert text(page, "#validation-accuracy") == "0.6100"
    assert fitness_points(page) == 1
    assert page.evaluate("() => document.getElementById('chart-weights-nodes').data[0].y") == [8, 8]
    # The empty chart's "No results yet" note gave way to its axes.
    page.wait_for_function("() => document.querySelectorAll('#chart-weights-fitness .xtick').length > 0",
                           timeout=60_000)
    assert not [url for url in requested if json_url in url], "the page fetched its JSON for an event"
    assert page.evaluate("() => window.__noReload") == "still here"

    # The socket drops; a generation published meanwhile is caught up after the reconnect, once.
    page.evaluate("() => window.nasLive.drop(2500)")
    publish(search, "weights.generation", row(1))
    wait_until(lambda: text(page, "#progress-text") == "2/5", 90, message="the missed generation caught up")
    wait_until(lambda: text(page, "#live-state") == "live", 90, message="live again")
    assert fitness_points(page) == 2 and text(page, "#validation-accuracy") == "0.7100"
    assert page.evaluate("() => document.getElementById('chart-weights-nodes').data[0].y") == [16, 16]
    seq = Search.objects.values_list("event_seq", flat=True).get(pk=search.pk)
    assert page.locator("#weights-page").get_attribute("data-seq") == str(seq)
    assert not [url for url in requested if json_url in url]
    assert errors == []


def test_a_resync_refetches_the_snapshot_once(page, web, django_user_model):
    owner = django_user_model.objects.create_user(username="ada", password="a-long-password-1")
    search = lifecycle.create_search(owner, "es resync", CONFIG)
    Search.objects.filter(pk=search.pk).update(status="running")
    json_url = f"/api/searches/{search.pk}/weights/"
    requested, errors = open_page(page, web, owner, search)
    # Offline while more events are logged than one catch-up holds (the page ignores these), then a generation.
    page.evaluate("() => window.nasLive.drop(3000)")
    thread = threading.Thread(target=broadcast.notify_many,
                              args=(search.pk, [("search.progress", {"done": 0, "total": 5})] * CATCH_UP))
    thread.start()
    thread.join()
    publish(search, "weights.generation", row(0))
    wait_until(lambda: text(page, "#progress-text") == "1/5", 120, message="the generation, through the resync")
    seq = Search.objects.values_list("event_seq", flat=True).get(pk=search.pk)
    wait_until(lambda: page.locator("#weights-page").get_attribute("data-seq") == str(seq), 60,
               message="the page at the snapshot's number")
    assert fitness_points(page) == 1 and text(page, "#validation-accuracy") == "0.6100"
    assert len([url for url in requested if json_url in url]) == 1
    assert errors == []
