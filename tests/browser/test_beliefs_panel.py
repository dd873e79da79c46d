"""A reinforce search's page in Chromium, on the real stack: the policy panel is there, drawn from the snapshot,
and grows as the search's results come (the page fetches it again after each ``search.progress``)."""
from __future__ import annotations

import pytest

from tests.browser.live_stack import sign_in, wait_until
from tests.engine.conftest import launched, simulated_config
from webapp.searches.models import Search
from webapp.services import lifecycle

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def policy(page):
    """The heatmap's columns (results told at each kept point) and rows, or None before it is drawn."""
    return page.evaluate("() => { const el = document.getElementById('chart-beliefs');"
                         " const t = el && el.data && el.data.find((t) => t.type === 'heatmap');"
                         " return t ? {x: Array.from(t.x), y: Array.from(t.y)} : null; }")


def test_a_reinforce_search_shows_its_policy_live(page, web, stack, django_user_model):
    """The panel draws the kept policy, then grows as later results come. So that "later" is certain whatever the
    machine's speed (a loaded run once drew the page after the last result), the search is stopped once its first
    beliefs are kept: the page draws what cannot grow while it is stopped, and the search is resumed only then."""
    from webapp.searches import beliefs

    stack.evaluator("alpha", slots=2, wait=False)
    stack.control()
    owner = django_user_model.objects.create_user(username="ada", password="a-long-password-1")
    config = {**simulated_config(evaluations=40, duration=0.5), "space": {"name": "chain", "max_layers": 3},
              "strategy": {"name": "reinforce", "seed": 2, "params": {"max_evaluations": 40}}}
    search = lifecycle.launch(lifecycle.create_search(owner, "policy", config))
    wait_until(lambda: beliefs.kept_for(search.pk), 120, message="the first beliefs kept")
    lifecycle.stop(Search.objects.get(pk=search.pk))
    stopped = wait_until(lambda: Search.objects.filter(pk=search.pk, status__in=(
        Search.Status.STOPPED, Search.Status.FINISHED)).first(), 120, message="stopped")
    assert stopped.status == Search.Status.STOPPED, "the search ended before its stop: nothing left to grow"
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    sign_in(page, web, owner)
    page.goto(f"{web}/searches/{search.pk}/")
    page.wait_for_function("() => document.getElementById('live-state').textContent === 'live'", timeout=60_000)
    assert "What the reinforce explorer believes" in page.inner_text("#beliefs-panel")
    first = wait_until(lambda: policy(page), 90, message="the policy drawn")
    assert first["y"][:3] == ["n_layers = 1", "n_layers = 2", "n_layers = 3"]
    lifecycle.resume(stopped)
    wait_until(lambda: len((policy(page) or {"x": []})["x"]) > len(first["x"]), 120,
               message="the policy redrawn with later results")
    wait_until(lambda: Search.objects.get(pk=search.pk).status == Search.Status.FINISHED, 120, message="finished")
    assert not errors, errors


def test_a_regularized_search_has_no_policy_panel(page, web, django_user_model):
    owner = django_user_model.objects.create_user(username="bob", password="a-long-password-1")
    search = launched("evolution", simulated_config(evaluations=4))
    search.owner = owner
    search.save(update_fields=["owner"])
    sign_in(page, web, owner)
    page.goto(f"{web}/searches/{search.pk}/")
    page.wait_for_selector("#chart-fitness")
    assert page.query_selector("#chart-beliefs") is None
