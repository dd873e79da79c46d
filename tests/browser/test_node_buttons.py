"""The nodes page's drain button in a real browser, on the real stack (issue 34): staff drain a live worker and
the page shows it drained without a reload; a user who is not staff gets a 403 with the reason on a worker that
serves another user's search."""
import pytest
from django.contrib.auth import get_user_model

from tests.browser.live_stack import sign_in, wait_until
from tests.engine.conftest import launched, simulated_config
from webapp.messaging import node_state

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def test_staff_drain_a_worker_from_the_nodes_page_and_others_get_403(page, stack, web):
    users = get_user_model().objects
    worker = stack.evaluator("button-a")
    sign_in(page, web, users.create_user("mallory", password="a-long-password-1"))
    launched("someone else's", simulated_config(evaluations=2, duration=0.1))  # served by button-a, owned by "tester"
    wait_until(lambda: "button-a" in page.request.get(web + "/api/nodes/").text(), 60, message="button-a listed")
    page.goto(web + "/nodes/")
    row = page.locator('#nodes tr[data-node="button-a"]')
    assert row.count() == 1, page.content()
    response_of = {}
    page.on("response", lambda r: response_of.setdefault(r.status, r) if "/nodes/button-a/" in r.url else None)
    row.locator("button[data-action=drain]").click()
    page.wait_for_load_state()
    assert 403 in response_of and "Only staff, or the owner of every search" in page.content()
    assert node_state.get("button-a") == "active"  # nothing changed

    page.context.clear_cookies()
    sign_in(page, web, users.create_user("root", password="a-long-password-1", is_staff=True))
    page.goto(web + "/nodes/")
    row.locator("button[data-action=drain]").click()
    page.locator(".messages").get_by_text("Node button-a is").wait_for()
    worker.wait_for("stopped taking work", timeout=60)
    # the page follows the node live (no reload): drained once its evaluations are over
    page.locator('#nodes tr[data-node="button-a"] .node-state', has_text="drained").wait_for(timeout=60_000)
    wait_until(lambda: node_state.get("button-a") == "draining", 10)
