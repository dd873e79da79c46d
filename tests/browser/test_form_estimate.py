"""Issue 36, item 10: the search form's estimate line is computed from valid values only: with a field out of its
bounds it names the fields to fix instead of "Up to 99999999 evaluations"."""
from __future__ import annotations

import pytest

from tests.browser.live_stack import sign_in, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def test_the_estimate_waits_for_valid_fields(page, web, django_user_model):
    user = django_user_model.objects.create_user(username="estimator", password="a-long-password-1")
    sign_in(page, web, user)
    page.goto(web + "/searches/new/")
    estimate = page.locator("#estimate")
    wait_until(lambda: "evaluations" in estimate.inner_text(), 30, message="an estimate of the defaults")
    assert "24" in estimate.inner_text()
    page.fill("input[name=max_evaluations]", "99999999")
    page.fill("input[name=epochs]", "-5")
    wait_until(lambda: "No estimate until" in estimate.inner_text(), 30, message="no estimate")
    text = estimate.inner_text()
    assert "max_evaluations" in text and "epochs" in text and "99999999" not in text
    page.fill("input[name=max_evaluations]", "12")
    page.fill("input[name=epochs]", "2")
    wait_until(lambda: "12 evaluations" in estimate.inner_text(), 30, message="the estimate back")
