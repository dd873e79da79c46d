"""The re-run button on a failed individual's page, in a real browser on the real stack (issue 34): a spent search
offers "Re-run and extend" and says what it changes; a click re-runs the individual on a fixed host, and the page
lists both attempts with their outcome, reason and node."""
import os

import pytest

from tests.browser.live_stack import sign_in
from tests.engine.conftest import finished, launched, owner
from tests.engine.test_reruns import failing_config
from webapp.searches.models import Individual

pytestmark = [pytest.mark.browser, pytest.mark.integration]
#: Where the screenshot for the issue's closing note goes (none when unset).
SHOTS = os.environ.get("NAS_SCREENSHOTS", "")


def test_the_rerun_button_reruns_a_failed_individual_and_its_page_lists_both_attempts(page, stack, web):
    stack.control(wait=False)
    sick = stack.evaluator("page-sick")
    search = finished(launched("rerun button", failing_config(failing=1, evaluations=4)).pk, timeout=120)
    assert Individual.objects.get(search=search, number=0).status == "failed"
    sign_in(page, web, owner())
    page.goto(f"{web}/searches/{search.pk}/")
    assert page.locator("#rerun-failed-button").inner_text() == "Re-run failed (1) and extend"
    assert "5 in all" in page.locator("#rerun-failed-note").inner_text()
    if SHOTS:
        page.screenshot(path=os.path.join(SHOTS, "search-rerun-failed.png"), full_page=False)
    page.goto(f"{web}/searches/{search.pk}/individuals/0/")
    assert page.locator("#attempt-1").inner_text().count("oom") and "page-sick" in page.locator("#attempt-1").inner_text()
    button = page.locator("#rerun-button")
    assert button.inner_text() == "Re-run and extend"
    assert "reopens it" in page.locator("#rerun-note").inner_text()
    if SHOTS:
        page.screenshot(path=os.path.join(SHOTS, "individual-rerun-button.png"), full_page=True)
    sick.stop(timeout=30)
    stack.evaluator("page-fixed", NAS_SIM_HEALED="1")
    button.click()
    page.locator(".messages").get_by_text("Re-run of 1 individual").wait_for()
    finished(search.pk, timeout=120)
    page.reload()
    page.locator("#attempt-2").wait_for()
    second = page.locator("#attempt-2").inner_text()
    assert "ok" in second and "page-fixed" in second and "re-run 1" in second
    assert page.locator("#individual-state").inner_text() == "done"
    assert page.locator("#rerun-button").count() == 0  # it succeeded: nothing to re-run
    if SHOTS:
        page.screenshot(path=os.path.join(SHOTS, "individual-attempts.png"), full_page=True)
