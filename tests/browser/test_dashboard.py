"""The dashboard in headless Debian Chromium against the real stack: Redis, a daphne ASGI server, a control
worker and an evaluation worker as subprocesses sharing the test database. Sign in, see the form's errors,
create and launch, watch points and bars grow without a reload, stop, resume, drop the websocket mid-search
and still end with every point, clone, download the CSV and the zip.

No step depends on how fast the machine is: a search that must still be running when a step comes has a
budget it cannot finish within the test (the test stops it), and every wait is for a condition, with minutes
to spare."""
from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.browser.live_stack import sign_in, wait_until
from tests.scoring import score_as_the_readme_says
from webapp.searches.models import Individual, Search

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.timeout(1200)]
#: The watched search's budget: at 0.4 s an evaluation on two slots, over 15 minutes of work, where the test
#: needs a few dozen results before it stops the search itself.
BUDGET = 5000
#: How long a step may take on a loaded machine (seconds): generous, as a wait ends once its condition holds.
SLOW = 240


def engine_runs(search, done: int, timeout: float = SLOW) -> None:
    """Wait until the engine recorded ``done`` results (so a stalled engine is told apart from a stale page)."""
    def progressed():
        row = Search.objects.values("status", "lease_owner", "lease_expires", "evaluations_done").get(pk=search.pk)
        progressed.last = row
        return row["evaluations_done"] >= done

    try:
        wait_until(progressed, timeout, message="results recorded")
    except AssertionError:
        raise AssertionError(f"the engine recorded too few results: {progressed.last}") from None


def points(page, timeout: float | None = None) -> int:
    return int(page.locator("#search-page").get_attribute("data-points", timeout=timeout) or 0)


def bar_total(page) -> int:
    return page.evaluate("() => { const d = document.getElementById('chart-nodes').data;"
                         " return d && d[0] ? d[0].y.reduce((a, b) => a + b, 0) : 0; }")


def status(page) -> str:
    return page.locator("#search-status").inner_text()


def test_create_launch_watch_stop_resume_clone_download(page, web, stack, django_user_model, tmp_path):
    stack.evaluator("alpha", slots=2, wait=False)
    stack.control()
    django_user_model.objects.create_user(username="ada", password="a-long-password-1")
    errors: list[str] = []  # the page's uncaught script errors: a live page that throws stops drawing
    page.on("pageerror", lambda error: errors.append(str(error)))

    # Sign in (every page but the login page needs it).
    page.goto(web + "/searches/new/")
    assert "/accounts/login/" in page.url
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", "a-long-password-1")
    page.click("button[type=submit]")
    page.wait_for_url(web + "/searches/new/")

    # Invalid values: an error next to each field, nothing saved.
    page.fill("input[name=population]", "1")
    page.fill("input[name=epochs]", "0")
    page.fill("input[name=learning_rate]", "-0.1")
    page.fill("input[name=pool]", "not a pool")
    page.click("button[name=launch]")
    for field in ("population", "epochs", "learning_rate", "pool"):
        assert page.locator(f"#row-{field} .field-error").is_visible(), field
    assert "greater than or equal to 2" in page.locator("#error-population").inner_text()
    assert Search.objects.count() == 0

    # A valid search (simulated evaluations keep the test short; the form's default is real training).
    page.fill("input[name=name]", "watched live")
    page.fill("input[name=population]", "4")
    page.fill("input[name=sample_size]", "2")
    page.fill("input[name=max_evaluations]", str(BUDGET))
    page.fill("input[name=epochs]", "2")
    page.fill("input[name=learning_rate]", "0.001")
    page.fill("input[name=pool]", "eval")
    page.select_option("select[name=evaluation]", "simulated")
    page.fill("input[name=sim_duration]", "0.4")
    page.click("button[name=launch]")
    page.wait_for_url("**/searches/*/")
    search = Search.objects.get(name="watched live")
    assert search.config["evaluation"]["mode"] == "simulated" and search.config["dataset"] == "digits"

    # Points and bars appear and grow without a reload.
    page.evaluate("() => { window.__noReload = 'still here'; }")
    engine_runs(search, 2)
    page.wait_for_function("() => Number(document.getElementById('search-page').dataset.points) >= 2",
                           timeout=SLOW * 1000)
    first, first_bars = points(page), bar_total(page)
    page.wait_for_function(f"() => Number(document.getElementById('search-page').dataset.points) > {first + 2}",
                           timeout=SLOW * 1000)
    wait_until(lambda: bar_total(page) > first_bars, SLOW, message="bars grow")
    assert page.evaluate("() => window.__noReload") == "still here"
    wait_until(lambda: page.locator("#live-state").inner_text() == "live", SLOW, message="socket live")
    assert page.locator("#chart-gantt .scatterlayer, #chart-gantt canvas").count() > 0
    # The timeline shows evaluations under way too (bars up to now), and the table's node filter offers the
    # node that joined after the page loaded.
    page.wait_for_function("""() => { const el = document.getElementById('chart-gantt');
        const t = el && el.data && el.data.find((t) => t.name === 'running'); return t && t.x.length >= 3; }""",
                           timeout=SLOW * 1000)
    page.wait_for_timeout(1500)  # a redraw or two of the running bars, which must keep the time axis a time axis
    assert page.evaluate("() => document.getElementById('chart-gantt')._fullLayout.xaxis.type") == "date"
    nodes = page.locator("#table-filter select[name=node] option").all_inner_texts()
    assert set(Individual.objects.filter(search=search).exclude(node="").values_list("node", flat=True)) <= set(nodes)

    # Stop, then resume.
    page.click("#stop-button")
    wait_until(lambda: status(page) == "stopped", SLOW, message="stopped")
    page.reload()
    assert page.locator("#resume-button").is_enabled()
    done_when_stopped = Search.objects.get(pk=search.pk).evaluations_done
    assert 0 < done_when_stopped < BUDGET
    page.click("#resume-button")
    wait_until(lambda: status(page) == "running", SLOW, message="running again")

    # Drop the websocket mid-search and stay offline a while: the page still ends with every point.
    page.evaluate("() => { window.__noReload = 'after resume'; }")
    page.wait_for_function(
        f"() => Number(document.getElementById('search-page').dataset.points) > {done_when_stopped + 4}",
        timeout=SLOW * 1000)
    # The README's screenshot: the live page of this running search (copy it to static/img/dashboard.png by
    # hand when the page changes; a test run never rewrites a tracked file).
    page.set_viewport_size({"width": 1300, "height": 1250})
    screenshot = settings.STATE_DIR / "screenshots" / "dashboard.png"
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(screenshot), full_page=False)
    assert screenshot.stat().st_size > 30_000
    assert Search.objects.get(pk=search.pk).status == "running"  # its budget outlasts the test
    page.evaluate("() => window.nasLive.drop(2500)")
    seen_at_drop = points(page)
    wait_until(lambda: Search.objects.get(pk=search.pk).evaluations_done > seen_at_drop + 2, SLOW,
               message="results while offline")
    # Stop it for good through the API (a form would reload the page): every result the engine recorded
    # reaches the page, those published while it was offline included.
    stopped = page.request.post(f"{web}/api/searches/{search.pk}/stop/",
                                headers={"X-CSRFToken": page.evaluate("() => window.nasLive.csrf()")})
    assert stopped.ok, stopped.text()
    wait_until(lambda: status(page) == "stopped", SLOW, message="stopped for good")

    def every_result_shown() -> bool:
        # Counted again each time: a result that arrives after the stop is recorded and shown too.
        final = Individual.objects.filter(search=search, status__in=Individual.FINAL).count()
        every_result_shown.final = final
        try:
            return points(page, timeout=30_000) == final and page.evaluate("() => window.nasLive.pointCount()") == final
        except PlaywrightTimeoutError:
            # A renderer busy for a while (a shared 2-core machine draws WebGL in software): ask again; the
            # wait's own limit still ends a page that never shows them.
            return False

    wait_until(every_result_shown, SLOW, message="every recorded result on the page")
    assert every_result_shown.final > seen_at_drop + 2
    assert page.evaluate("() => window.nasLive.state.dropped") == 1
    assert page.evaluate("() => window.__noReload") == "after resume"

    assert errors == [], errors[:3]

    # Downloads: the CSV and the zip of the best.
    with page.expect_download() as download:
        page.click("#download-csv")
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))
    assert len(rows) == Individual.objects.filter(search=search).count()
    assert {"number", "state", "fitness", "genome_n_layers", "metric_accuracy", "node", "slot"} <= set(rows[0])
    assert {r["node"] for r in rows if r["state"] == "done"} == {"alpha"}
    # ONNX export of each architecture takes seconds on a small CPU.
    with page.expect_download(timeout=SLOW * 1000) as download:
        page.click("#download-best", timeout=SLOW * 1000)
    archive = zipfile.ZipFile(download.value.path())
    assert download.value.suggested_filename.endswith(".zip"), download.value.suggested_filename
    wait_until(lambda: page.locator("#download-best").inner_text() == "Best 5 (zip)", SLOW,
               message="button label back")
    assert "rank01_" in archive.namelist()[0] and any(n.endswith("genome.json") for n in archive.namelist())
    check_sources_build(archive, tmp_path)

    # Clone: a new draft with the same configuration.
    page.click("#clone-button")
    page.wait_for_url(lambda url: url.rstrip("/").split("/")[-1] != str(search.pk))
    copy = Search.objects.exclude(pk=search.pk).get()
    assert copy.status == "draft" and copy.config == search.config and copy.cloned_from_id == search.pk
    assert page.locator("#launch-button").is_enabled()
    assert "cloned from" in page.content()


def check_sources_build(archive: zipfile.ZipFile, folder: Path) -> None:
    """Each architecture in the zip has a model.py, and each builds a torch model."""
    sources = [n for n in archive.namelist() if n.endswith("model.py")]
    assert sources and len(sources) == len([n for n in archive.namelist() if n.endswith("genome.json")])
    for name in sources:
        path = folder / name.replace("/", "_")
        path.write_bytes(archive.read(name))
        namespace: dict = {}
        exec(compile(path.read_text(), str(path), "exec"), namespace)
        model = namespace["build"]()
        assert sum(p.numel() for p in model.parameters()) > 0
        import torch

        with torch.no_grad():
            assert model(torch.zeros(2, 1, 8, 8)).shape == (2, 10)  # digits: 8x8 grey images, ten classes


def test_a_real_digits_search_from_the_form_defaults(page, web, stack, django_user_model, tmp_path):
    """The form's default evaluation (real PyTorch training on digits), made small: six evaluations of one epoch."""
    stack.evaluator("trainer", wait=False)
    stack.control()
    user = django_user_model.objects.create_user(username="grace", password="a-long-password-1")
    sign_in(page, web, user)
    page.goto(web + "/searches/new/")
    assert page.locator("select[name=evaluation]").input_value() == "train"
    assert page.locator("select[name=dataset]").input_value() == "digits"
    page.fill("input[name=name]", "real digits")
    page.fill("input[name=population]", "3")
    page.fill("input[name=sample_size]", "2")
    page.fill("input[name=max_evaluations]", "6")
    page.fill("input[name=epochs]", "1")
    page.click("button[name=launch]")
    page.wait_for_url("**/searches/*/")
    search = Search.objects.get(name="real digits")
    assert search.config["evaluation"] == {"mode": "train", "keep_weights": 5}
    engine_runs(search, 1)
    page.wait_for_function("() => Number(document.getElementById('search-page').dataset.points) >= 1",
                           timeout=SLOW * 1000)
    wait_until(lambda: status(page) == "finished", 2 * SLOW, message="finished")
    wait_until(lambda: points(page) == 6, SLOW, message="six points")
    best = Individual.objects.filter(search=search, status="done").order_by("-fitness").first()
    assert best is not None and best.metrics["params"] > 0 and best.curve

    page.goto(f"{web}/searches/{search.pk}/individuals/{best.number}/")
    page.wait_for_function("() => document.getElementById('chart-curve').data.length > 0")
    assert "conv" in page.locator("#diagram").inner_text()
    assert "trained weights" in page.locator("a[href$='.zip']").inner_text()
    # The best two through the browser's own session (the button, k=5, is clicked in the test above).
    response = page.request.get(f"{web}/searches/{search.pk}/download/best.zip?k=2", timeout=SLOW * 1000)
    assert response.ok and response.headers["content-type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(response.body()))
    names = archive.namelist()
    assert any(n.endswith("model.onnx") for n in names), names
    check_sources_build(archive, tmp_path)
    check_trained_model(archive, f"rank01_n{best.number}", best.fitness, search.config["training"]["seed"], tmp_path)


def check_trained_model(archive: zipfile.ZipFile, prefix: str, accuracy: float, seed: int, folder: Path) -> None:
    """The architecture's own README, run as a user would in the unpacked folder: it loads the raw digits with
    scikit-learn, model.py and weights.pt, and prints the accuracy on the search's validation split, which must
    be the accuracy the search reported (the network normalises its raw input itself)."""
    assert score_as_the_readme_says(archive, prefix, folder) == pytest.approx(accuracy, abs=1e-6)
