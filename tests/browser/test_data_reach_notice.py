"""A search's page in Chromium on the real stack (issue 35): a worker that cannot read the search's data set
shows, live, as a notice ("worker beta ... cannot read the data set ..."), and the search still finishes on the
worker that can. Each step waits on a state the test set: ``alpha`` (which reads the set) is paused until the
page is live and beta has failed, so nothing can finish before the notice is seen."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from tests.browser.live_stack import sign_in, wait_until
from tests.engine.conftest import finished, launched, owner
from tests.engine.test_data_reach import CONFIG, _blind, _register
from webapp.messaging import data_reach
from webapp.searches.models import Individual, Search
from webapp.services import node_control

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def test_the_page_says_live_which_worker_cannot_read_the_set(page, stack, web, tmp_path, settings):
    staff = get_user_model().objects.create_user("chief", password="a-long-password-1", is_staff=True)
    _register(tmp_path, settings)
    stack.control(wait=False)
    stack.evaluator("alpha", OMP_NUM_THREADS="1")
    wait_until(lambda: "alpha" in node_control.known_nodes(), 60, message="alpha's heartbeat")
    node_control.set_state(staff, "alpha", "pause")
    config = {**CONFIG, "strategy": {**CONFIG["strategy"], "params": {"population": 2, "sample_size": 2,
                                                                      "max_evaluations": 2}}}
    search = launched("seen live", config)
    sign_in(page, web, owner())
    page.goto(f"{web}/searches/{search.pk}/")
    page.wait_for_function("() => document.getElementById('live-state').textContent === 'live'", timeout=60_000)
    notice = page.locator("#data-unreadable")
    assert notice.is_hidden()

    _blind(stack, tmp_path, "beta")  # takes the queued evaluations, cannot read the set, hands them back
    notice.wait_for(state="visible", timeout=120_000)
    text = notice.inner_text()
    assert text.startswith("worker beta (host ") and "the data set 'tiny_digits'" in text, text
    assert "could not fetch it from http://127.0.0.1:" in text, text
    assert set(data_reach.nodes(search.pk)) == {"beta"}
    page.screenshot(path=str(settings.STATE_DIR / "data-unreadable.png"), full_page=False)

    node_control.set_state(staff, "alpha", "resume")  # the one that reads the set finishes the search
    done = finished(search.pk, timeout=300)
    assert done.status == Search.Status.FINISHED, done.status_reason
    assert all(i.node == "alpha" for i in Individual.objects.filter(search=done))
    assert notice.is_visible()  # the notice stays: it says what happened
