"""No page runs a stranger's script: every query parameter of every page, a search's name and the table's
filters are driven with script payloads in Chromium, and no dialog opens; the pages' own use (the live charts
over the websocket, the learning curve) raises no Content-Security-Policy violation."""
from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.browser.live_stack import sign_in
from benchmarks.bulk import bulk_search
from webapp.searches.models import Individual

pytestmark = [pytest.mark.browser, pytest.mark.integration]

#: Each tries a different context: element content, an attribute, a URL, a JavaScript string.
PAYLOADS = ["<script>alert(document.cookie)</script>", '"><img src=x onerror=alert(1)>',
            "'-alert(2)-'", "javascript:alert(3)"]
POINTS = 30


#: Chromium logs a refused inline script or style, but not an ``eval`` that a library tried and caught: the
#: page's own violation events say it for every kind.
REPORT = """document.addEventListener("securitypolicyviolation", (e) => console.error(
    "Content Security Policy violation: " + e.violatedDirective + " " + e.blockedURI + " at " + e.sourceFile
    + ":" + e.lineNumber));"""


class Watch:
    """Every dialog and every Content-Security-Policy violation of one browser page."""

    def __init__(self, page) -> None:
        self.dialogs: list[str] = []
        self.violations: list[str] = []
        page.add_init_script(REPORT)
        page.on("dialog", self._dialog)
        page.on("console", self._console)

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _console(self, message) -> None:
        if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text:
            self.violations.append(message.text)

    def clean(self, where: str) -> None:
        assert not self.dialogs, f"{where}: a script ran, dialogs {self.dialogs}"
        assert not self.violations, f"{where}: {self.violations}"


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user(username="ada", password="a-long-password-1")


@pytest.fixture
def search(owner):
    search = bulk_search(owner, POINTS, nodes=2, name="<script>alert('name')</script>")
    Individual.objects.filter(search=search, number=1).update(
        curve=[{"epoch": 1, "train_loss": 1.0, "val_accuracy": 0.5}, {"epoch": 2, "train_loss": 0.6, "val_accuracy": 0.7}],
        metrics={"accuracy": 0.7, "params": 1234, "note": PAYLOADS[1]})
    return search


def urls(search_id: int, payload: str) -> list[str]:
    """Every page with every query parameter it reads (and one it does not) set to ``payload``."""
    p = quote(payload, safe="")
    table = f"/searches/{search_id}/table/"
    return [
        f"/?next={p}", f"/searches/?page={p}", f"/searches/?sort={p}", f"/searches/rows/?sort={p}",
        f"/compare/?ids={search_id},{p}", f"/compare/searches.csv?ids={p}",
        f"/searches/new/?name={p}", f"/searches/{search_id}/?q={p}",
        *[f"{table}?{name}={p}" for name in ("sort", "status", "page", "per_page", "node", "q")],
        f"/searches/{search_id}/individuals/1/?q={p}", f"/nodes/?node={p}",
        f"/searches/{search_id}/download/best.zip?k={p}",
        f"/searches/{search_id + 1000}/?q={p}", f"/api/searches/{search_id}/individuals/?sort={p}",
    ]


def test_no_query_parameter_runs_a_script(page, web, owner, search):
    watch = Watch(page)
    for payload in PAYLOADS:
        page.goto(f"{web}/accounts/login/?next={quote(payload, safe='')}")
        # Escaped, not cut short; a URL of another scheme is dropped (Django checks where `next` leads).
        expected = "" if payload.startswith("javascript:") else payload
        assert page.locator("input[name=next]").input_value() == expected
    sign_in(page, web, owner)
    for payload in PAYLOADS:
        for url in urls(search.pk, payload):
            response = page.goto(web + url)
            assert response.status < 500, (url, response.status)
            watch.clean(url)
            if "text/html" in response.headers["content-type"] and any(c in payload for c in "<\""):
                assert payload not in response.text(), f"{url}: the payload is in the page as it was sent"
    # An action whose name is a payload (POST only: the form of the Stop button, pointed at it).
    for payload in PAYLOADS[1:]:  # the first holds a "/", which no action name can
        page.goto(f"{web}/searches/{search.pk}/")
        with page.expect_navigation():
            page.evaluate("""(action) => { const form = document.getElementById('stop-button').form;
                form.action = action; form.submit(); }""", f"/searches/{search.pk}/{quote(payload, safe='')}/")
        assert "Unknown action" in page.content()
        watch.clean(f"action {payload}")
    # The table's filters as a user types them, and the search's own name on its pages.
    page.goto(f"{web}/searches/{search.pk}/")
    page.wait_for_selector(".table-meta")
    for payload in PAYLOADS:
        page.evaluate("() => document.querySelector('.table-meta').remove()")  # back when the table is reloaded
        page.fill("#table-filter input[name=q]", payload)
        page.wait_for_selector(".table-meta")
        assert "0 individuals" in page.locator(".table-meta").inner_text()
    assert search.name in page.locator("h1").inner_text()
    watch.clean("the table's filter")


def test_the_pages_work_under_the_policy(page, web, owner, search):
    watch = Watch(page)
    sign_in(page, web, owner)
    response = page.goto(f"{web}/searches/{search.pk}/")
    # The WebGL charts' library compiles some of its drawing code at run time (see webapp.dashboard.csp).
    assert "script-src 'self' 'unsafe-eval';" in response.headers["content-security-policy"]
    page.wait_for_function(f"() => window.nasLive && window.nasLive.pointCount() === {POINTS}", timeout=60_000)
    page.wait_for_function("() => document.getElementById('live-state').textContent === 'live'", timeout=60_000)
    for chart in ("fitness", "best", "throughput", "gantt"):
        page.wait_for_selector(f"#chart-{chart} .gl-container canvas", state="attached")
    page.wait_for_timeout(1000)  # a redraw of the running bars and the charts' layout
    assert "WebGL is not supported" not in page.locator(".charts").inner_text()
    # plotly.js's own rules apply (its mode bar floats over the chart), from a stylesheet, not a <style>.
    assert page.evaluate("() => getComputedStyle(document.querySelector('#chart-fitness .modebar')).position") \
        == "absolute"
    page.goto(f"{web}/searches/{search.pk}/individuals/1/")
    page.wait_for_function("() => { const el = document.getElementById('chart-curve');"
                           " return el && el.data && el.data.length === 2; }", timeout=30_000)
    page.hover("#chart-curve .scatterlayer .point", force=True)  # a hover label is drawn too
    page.wait_for_selector("#chart-curve .hoverlayer .hovertext")
    page.goto(f"{web}/")
    page.goto(f"{web}/admin/")
    watch.clean("normal use")
