"""A one-shot search in Chromium, on the real stack: its panel shows the phase from the start (supernet
training), follows it live without a reload through the path search and the ranking check, and ends with
Kendall's tau, its interval and the scatter plot; the ranking check's CSV is a link on the panel."""
from __future__ import annotations

import pytest

from tests.browser.live_stack import sign_in
from tests.engine.test_oneshot_search import TINY
from webapp.services import lifecycle

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def test_the_oneshot_panel_follows_the_phases_live(page, web, stack, django_user_model):
    stack.control()  # the evaluation worker starts once the page is open: it sees the whole search
    owner = django_user_model.objects.create_user(username="ada", password="a-long-password-1")
    search = lifecycle.launch(lifecycle.create_search(owner, "one-shot", TINY))
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    sign_in(page, web, owner)
    page.goto(f"{web}/searches/{search.pk}/")
    page.wait_for_function("() => document.getElementById('live-state').textContent === 'live'", timeout=60_000)
    assert page.inner_text("#oneshot-phase") == "supernet training"
    assert "no epoch done yet" in page.inner_text("#supernet-curve")
    stack.evaluator("alpha", OMP_NUM_THREADS="1")
    page.wait_for_function("() => document.querySelectorAll('#supernet-curve tbody tr td').length > 1",
                           timeout=300_000)  # an epoch reported, shown without a reload
    page.wait_for_function("() => (document.getElementById('oneshot-phase') || {}).textContent === 'done'",
                           timeout=600_000)
    assert "Kendall tau" in page.inner_text("#ranking-tau") and page.inner_text("#tau-interval")
    assert page.eval_on_selector_all("#ranking-scatter circle", "dots => dots.length") == 5
    assert page.get_attribute("#download-ranking", "href").endswith("/download/ranking-check.csv")
    page.wait_for_function("() => { const el = document.getElementById('chart-fitness');"
                           " return el && el.data && el.data.some((t) => t.name === 'supernet'); }", timeout=60_000)
    assert not errors, errors
