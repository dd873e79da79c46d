"""A new user's first hour, in headless Chromium on the real stack (Redis, daphne, a control worker and a CPU
evaluation worker training real networks on digits): create a search with the form, launch it, watch it, stop
it, clone it and change the clone before launching it, download the best architectures and score the download
on the raw digits exactly as its README says, matching the accuracy the search reported.

No step depends on how fast the machine is: the first search's budget cannot be finished before the test stops
it, and every wait is for a condition."""
from __future__ import annotations

import io
import zipfile

import pytest

from tests.browser.live_stack import sign_in, wait_until
from tests.browser.test_dashboard import SLOW, engine_runs, points, score_as_the_readme_says, status
from webapp.searches.models import Individual, Search

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.timeout(1800)]


def test_the_first_hour(page, web, stack, django_user_model, tmp_path):
    stack.evaluator("laptop", OMP_NUM_THREADS="1", wait=False)
    stack.control()
    user = django_user_model.objects.create_user(username="newcomer", password="a-long-password-1")
    sign_in(page, web, user)

    # Create: the form says what the budget means before anything was ever trained here.
    page.goto(web + "/searches/new/")
    page.fill("input[name=name]", "my first search")
    page.fill("input[name=population]", "3")
    page.fill("input[name=sample_size]", "2")
    page.fill("input[name=max_evaluations]", "300")  # far more than the test lets it do
    page.fill("input[name=epochs]", "1")
    wait_until(lambda: "evaluations" in page.locator("#estimate").inner_text(), 30, message="an estimate")
    assert "the first results will tell" in page.locator("#estimate").inner_text()
    page.click("button[name=launch]")
    page.wait_for_url("**/searches/*/")
    first = Search.objects.get(name="my first search")

    # Watch: results reach the page live.
    engine_runs(first, 2)
    wait_until(lambda: points(page) >= 2, SLOW, message="two points on the page")

    # Stop: the evaluation under way is still recorded; nothing is left shown running or queued.
    page.click("#stop-button")
    wait_until(lambda: status(page) == "stopped", SLOW, message="stopped on the page")
    first.refresh_from_db()
    assert not Individual.objects.filter(search=first, status=Individual.Status.RUNNING).exists()
    page.reload()
    wait_until(lambda: page.locator("#individuals tbody tr").count() > 0, SLOW, message="the table")
    states = {text.split(" (")[0] for text in page.locator("#individuals tbody td:nth-child(2)").all_inner_texts()}
    assert states <= {"done", "failed", "not sent"}, states

    # Clone, and change the copy before launching it: it opens in the form, prefilled.
    page.click("#clone-button")
    page.wait_for_url("**/edit/")
    assert "cloned from" in page.content()
    assert page.locator("input[name=population]").input_value() == "3"
    assert page.locator("input[name=epochs]").input_value() == "1"
    assert "measured here" in page.locator("#estimate").inner_text()  # what the first search measured
    page.fill("input[name=name]", "smaller copy")
    page.fill("input[name=max_evaluations]", "3")
    page.click("#launch-button")
    page.wait_for_url(lambda url: not url.rstrip("/").endswith("edit"))
    copy = Search.objects.get(name="smaller copy")
    assert copy.cloned_from_id == first.pk and copy.config["strategy"]["params"]["max_evaluations"] == 3
    wait_until(lambda: status(page) == "finished", 3 * SLOW, message="the copy finished")
    page.wait_for_function("() => document.getElementById('progress-text').textContent.startsWith('3/3')")

    # Download the best and score it on the raw digits, as its README says.
    with page.expect_download(timeout=SLOW * 1000) as download:
        page.click("#download-best")
    archive = zipfile.ZipFile(io.BytesIO(open(download.value.path(), "rb").read()))
    best = Individual.objects.filter(search=copy, status="done").order_by("-fitness", "number").first()
    prefix = f"rank01_n{best.number}"
    assert {f"{prefix}/model.py", f"{prefix}/weights.pt", f"{prefix}/model.onnx", f"{prefix}/README.txt"} <= set(
        archive.namelist())
    assert score_as_the_readme_says(archive, prefix, tmp_path) == pytest.approx(best.fitness, abs=1e-6)
