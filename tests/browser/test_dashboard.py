"""The dashboard in headless Debian Chromium against the real stack: Redis, a daphne ASGI server, a control
worker and an evaluation worker as subprocesses sharing the test database. Sign in, see the form's errors,
create and launch, watch points and bars grow without a reload, stop, resume, drop the websocket mid-search
and still end with every point, clone, download the CSV and the zip."""
from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import pytest
from django.conf import settings

from tests.browser.live_stack import engine, sign_in, stack, wait_until, web  # noqa: F401 (fixtures)
from webapp.searches.models import Individual, Search

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def engine_runs(search, done: int, timeout: float = 60) -> None:
    """Wait until the engine recorded ``done`` results (so a stalled engine is told apart from a stale page)."""
    def progressed():
        row = Search.objects.values("status", "lease_owner", "lease_expires", "evaluations_done").get(pk=search.pk)
        progressed.last = row
        return row["evaluations_done"] >= done

    try:
        wait_until(progressed, timeout, message="results recorded")
    except AssertionError:
        raise AssertionError(f"the engine recorded too few results: {progressed.last}") from None


def points(page) -> int:
    return int(page.locator("#search-page").get_attribute("data-points") or 0)


def bar_total(page) -> int:
    return page.evaluate("() => { const d = document.getElementById('chart-nodes').data;"
                         " return d && d[0] ? d[0].y.reduce((a, b) => a + b, 0) : 0; }")


def status(page) -> str:
    return page.locator("#search-status").inner_text()


def test_create_launch_watch_stop_resume_clone_download(page, web, stack, django_user_model, tmp_path):
    stack.evaluator("alpha", slots=2)
    stack.control()
    django_user_model.objects.create_user(username="ada", password="a-long-password-1")

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
    page.fill("input[name=max_evaluations]", "60")
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
    page.wait_for_function("() => Number(document.getElementById('search-page').dataset.points) >= 2", timeout=60_000)
    first, first_bars = points(page), bar_total(page)
    page.wait_for_function(f"() => Number(document.getElementById('search-page').dataset.points) > {first + 2}",
                           timeout=30_000)
    wait_until(lambda: bar_total(page) > first_bars, 15, message="bars grow")
    assert page.evaluate("() => window.__noReload") == "still here"
    wait_until(lambda: page.locator("#live-state").inner_text() == "live", 5, message="socket live")
    assert page.locator("#chart-gantt .scatterlayer, #chart-gantt canvas").count() > 0
    # The timeline shows evaluations under way too (bars up to now), and the table's node filter offers the
    # node that joined after the page loaded.
    page.wait_for_function("""() => { const el = document.getElementById('chart-gantt');
        const t = el && el.data && el.data.find((t) => t.name === 'running'); return t && t.x.length >= 3; }""",
                           timeout=15_000)
    page.wait_for_timeout(1500)  # a redraw or two of the running bars, which must keep the time axis a time axis
    assert page.evaluate("() => document.getElementById('chart-gantt')._fullLayout.xaxis.type") == "date"
    nodes = page.locator("#table-filter select[name=node] option").all_inner_texts()
    assert set(Individual.objects.filter(search=search).exclude(node="").values_list("node", flat=True)) <= set(nodes)

    # Stop, then resume.
    page.click("#stop-button")
    wait_until(lambda: status(page) == "stopped", 30, message="stopped")
    page.reload()
    assert page.locator("#resume-button").is_enabled()
    done_when_stopped = Search.objects.get(pk=search.pk).evaluations_done
    assert 0 < done_when_stopped < 60
    page.click("#resume-button")
    wait_until(lambda: status(page) == "running", 15, message="running again")

    # Drop the websocket mid-search and stay offline a while: the page still ends with every point.
    page.evaluate("() => { window.__noReload = 'after resume'; }")
    page.wait_for_function(
        f"() => Number(document.getElementById('search-page').dataset.points) > {done_when_stopped + 4}", timeout=30_000)
    # The README's screenshot: the live page of this running search (copy it to static/img/dashboard.png by
    # hand when the page changes; a test run never rewrites a tracked file).
    page.set_viewport_size({"width": 1300, "height": 1250})
    screenshot = settings.STATE_DIR / "screenshots" / "dashboard.png"
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(screenshot), full_page=False)
    assert screenshot.stat().st_size > 30_000
    assert Search.objects.get(pk=search.pk).status == "running", "the search ended before the socket was dropped"
    page.evaluate("() => window.nasLive.drop(2500)")
    seen_at_drop = points(page)
    wait_until(lambda: Search.objects.get(pk=search.pk).evaluations_done > seen_at_drop + 2, 30,
               message="results while offline")
    wait_until(lambda: status(page) == "finished", 90, message="finished")
    final = Individual.objects.filter(search=search, status__in=Individual.FINAL).count()
    assert final == 60
    wait_until(lambda: points(page) == final, 15, message="every point on the page")
    wait_until(lambda: page.evaluate("() => window.nasLive.pointCount()") == final, 5, message="every point drawn")
    assert page.evaluate("() => window.nasLive.state.dropped") == 1
    assert page.evaluate("() => window.__noReload") == "after resume"

    # Downloads: the CSV and the zip of the best.
    with page.expect_download() as download:
        page.click("#download-csv")
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))
    assert len(rows) == Individual.objects.filter(search=search).count()
    assert {"number", "state", "fitness", "genome_n_layers", "metric_accuracy", "node", "slot"} <= set(rows[0])
    assert {r["node"] for r in rows if r["state"] == "done"} == {"alpha"}
    # ONNX export of each architecture takes seconds on a small CPU.
    with page.expect_download(timeout=120_000) as download:
        page.click("#download-best", timeout=120_000)
    archive = zipfile.ZipFile(download.value.path())
    assert download.value.suggested_filename.endswith(".zip"), download.value.suggested_filename
    wait_until(lambda: page.locator("#download-best").inner_text() == "Best 5 (zip)", 5, message="button label back")
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
    """Each model.py in the zip (present once ``evaluators.export`` is installed) builds a torch model."""
    from webapp.services.exports import standalone_source_available

    sources = [n for n in archive.namelist() if n.endswith("model.py")]
    assert bool(sources) == standalone_source_available()
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
    stack.evaluator("trainer")
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
    engine_runs(search, 1, timeout=90)
    page.wait_for_function("() => Number(document.getElementById('search-page').dataset.points) >= 1", timeout=90_000)
    wait_until(lambda: status(page) == "finished", 120, message="finished")
    wait_until(lambda: points(page) == 6, 15, message="six points")
    best = Individual.objects.filter(search=search, status="done").order_by("-fitness").first()
    assert best is not None and best.metrics["params"] > 0 and best.curve

    page.goto(f"{web}/searches/{search.pk}/individuals/{best.number}/")
    page.wait_for_function("() => document.getElementById('chart-curve').data.length > 0")
    assert "conv" in page.locator("#diagram").inner_text()
    assert "trained weights" in page.locator("a[href$='.zip']").inner_text()
    # The best two through the browser's own session (the button, k=5, is clicked in the test above).
    response = page.request.get(f"{web}/searches/{search.pk}/download/best.zip?k=2", timeout=120_000)
    assert response.ok and response.headers["content-type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(response.body()))
    names = archive.namelist()
    assert any(n.endswith("model.onnx") for n in names), names
    check_sources_build(archive, tmp_path)
    check_trained_model(archive, f"rank01_n{best.number}", best.fitness, search.config["training"]["seed"], tmp_path)


def check_trained_model(archive: zipfile.ZipFile, prefix: str, accuracy: float, seed: int, folder: Path) -> None:
    """The zip's model.py with its weights.pt scores the search's validation accuracy: the download is the very
    network the worker trained."""
    import torch

    from evaluators.datasets import load_dataset

    path = folder / f"{prefix}_model.py"
    path.write_bytes(archive.read(f"{prefix}/model.py"))
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    model = namespace["build"]()
    model.load_state_dict(torch.load(io.BytesIO(archive.read(f"{prefix}/weights.pt")), weights_only=True))
    model.eval()
    data = load_dataset("digits", "cpu", seed)
    with torch.no_grad():
        predicted = model(data.val_x).argmax(1)
    assert int((predicted == data.val_y).sum()) / len(data.val_y) == pytest.approx(accuracy, abs=1e-12)
