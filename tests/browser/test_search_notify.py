"""A search's page in Chromium on the real stack (issue 34): when every worker of its pool is drained or paused,
the page says so live (the loop's ``search.workers`` event), and takes the notice away when one is resumed; the
"Notify me when it ends" button asks for the browser's permission on the click (never on load), and the end of
the search shows one notification. The browser's Notification API is replaced by a recorder (headless Chromium
shows none)."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from tests.browser.live_stack import sign_in, wait_until
from tests.engine.conftest import launched, owner, simulated_config
from webapp.searches.models import Search
from webapp.services import lifecycle, node_control

pytestmark = [pytest.mark.browser, pytest.mark.integration]

#: Records notifications and permission requests instead of showing them.
NOTIFICATION_RECORDER = """
window.__notes = []; window.__asked = 0;
window.Notification = class {
  constructor(title, options) { window.__notes.push({title, body: (options || {}).body || ""}); this.onclick = null; }
  close() {}
  static requestPermission() { window.__asked += 1; window.Notification.permission = "granted";
                               return Promise.resolve("granted"); }
};
window.Notification.permission = "default";
"""


def test_the_page_says_when_every_worker_is_paused_and_notifies_the_end(page, stack, web):
    """Each step waits on a state the test set, never on speed: while bell-a is paused nothing is evaluated, and
    an evaluation sleeps 30 s, so the search cannot end before the test stops it."""
    staff = get_user_model().objects.create_user("chief", password="a-long-password-1", is_staff=True)
    stack.control(wait=False)
    stack.evaluator("bell-a")
    wait_until(lambda: "bell-a" in node_control.known_nodes(), 60, message="bell-a's heartbeat")
    node_control.set_state(staff, "bell-a", "pause")
    search = launched("bell", simulated_config(evaluations=3, duration=30.0, population=3))
    page.add_init_script(NOTIFICATION_RECORDER)
    sign_in(page, web, owner())
    page.goto(f"{web}/searches/{search.pk}/")
    page.wait_for_function("() => document.getElementById('live-state').textContent === 'live'", timeout=60_000)
    assert page.evaluate("window.__asked") == 0  # nothing asked when the page loads
    notice = page.locator("#workers-idle")
    notice.wait_for(state="visible", timeout=60_000)
    assert "Every worker of the pool 'eval' is drained or paused: bell-a (paused)" in notice.inner_text()

    node_control.set_state(staff, "bell-a", "resume")  # the notice goes, live
    notice.wait_for(state="hidden", timeout=60_000)
    node_control.set_state(staff, "bell-a", "drain")  # and comes back, live
    notice.wait_for(state="visible", timeout=60_000)
    assert "bell-a (draining)" in notice.inner_text()

    page.locator("#notify-button").click()
    page.wait_for_function("() => window.__asked === 1")
    assert "Notifying this browser" in page.locator("#notify-button").inner_text()
    node_control.set_state(staff, "bell-a", "pause")  # hands its evaluation back: the stop below ends at once
    lifecycle.stop(Search.objects.get(pk=search.pk))
    wait_until(lambda: Search.objects.get(pk=search.pk).status == Search.Status.STOPPED, 120, message="stopped")
    page.wait_for_function("() => window.__notes.length > 0", timeout=60_000)
    notes = page.evaluate("window.__notes")
    assert notes == [{"title": "bell: stopped", "body": "stopped by its owner"}]
    assert notice.is_hidden()  # an ended search waits for no worker
