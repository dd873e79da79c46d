"""A search with ``final`` in Chromium, on the real stack: the Final training panel is there from the start
(waiting for the search), follows its final runs live without a reload, and ends with the result; the fitness
chart has the final runs on their own trace."""
from __future__ import annotations

import pytest

from tests.browser.live_stack import sign_in
from tests.engine.conftest import simulated_config
from webapp.services import lifecycle

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def test_the_final_training_panel_follows_the_final_runs_live(page, web, stack, django_user_model):
    stack.control()  # the evaluation worker starts once the page is open: it sees the whole search
    owner = django_user_model.objects.create_user(username="ada", password="a-long-password-1")
    config = {**simulated_config(evaluations=6, duration=1.0, population=3), "final": {"top": 2, "epochs": 4}}
    search = lifecycle.launch(lifecycle.create_search(owner, "final", config))
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    sign_in(page, web, owner)
    page.goto(f"{web}/searches/{search.pk}/")
    page.wait_for_function("() => document.getElementById('live-state').textContent === 'live'", timeout=60_000)
    panel = page.inner_text("#final-panel")
    assert "Final training" in panel and "top 2 genomes" in panel and "Waiting for the search to end" in panel
    assert page.inner_text("#final-state") == "waiting"
    stack.evaluator("alpha", slots=2)
    page.wait_for_function("() => (document.getElementById('final-state') || {}).textContent === 'done'",
                           timeout=180_000)
    assert page.eval_on_selector_all("#final-runs tbody tr", "rows => rows.length") == 2
    assert "Result:" in page.inner_text("#final-result")
    page.wait_for_function("() => { const el = document.getElementById('chart-fitness');"
                           " return el && el.data && el.data.some((t) => t.name === 'final runs'); }", timeout=60_000)
    assert not errors, errors
