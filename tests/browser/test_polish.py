"""What a new user sees in their first hour, in Chromium: a long name does not stretch a page, and an empty
chart says it has no results yet (instead of date axes around the year 2000) until its first point."""
from __future__ import annotations

import threading

import pytest

from tests.browser.live_stack import sign_in
from webapp.searches import broadcast
from benchmarks.bulk import bulk_search
from webapp.searches.models import Individual

pytestmark = [pytest.mark.browser, pytest.mark.integration]
WIDTH = 1100


def overflow(page) -> int:
    """How many pixels the page is wider than the window (0 when it fits)."""
    return page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")


def test_a_long_name_without_spaces_does_not_stretch_the_pages(page, web, django_user_model):
    owner = django_user_model.objects.create_user(username="ada", password="a-long-password-1")
    name = "a_long_name_without_spaces_or_hyphens_" * 5  # no place a browser may break a line
    search = bulk_search(owner, 1, name=name)
    sign_in(page, web, owner)
    page.set_viewport_size({"width": WIDTH, "height": 800})
    for url in ("/searches/", "/", f"/searches/{search.pk}/", f"/searches/{search.pk}/individuals/0/"):
        page.goto(web + url)
        assert overflow(page) <= 0, url
    page.goto(web + "/searches/")
    link = page.locator("#search-grid tbody td:nth-child(2) a")  # Grid.js's table
    assert link.get_attribute("title") == name  # the whole name is a hover away


def test_an_empty_chart_says_so_until_its_first_point(page, web, django_user_model):
    owner = django_user_model.objects.create_user(username="ada", password="a-long-password-1")
    search = bulk_search(owner, 0, name="empty so far")
    sign_in(page, web, owner)
    page.goto(f"{web}/searches/{search.pk}/")
    page.wait_for_function("() => document.getElementById('live-state').textContent === 'live'", timeout=60_000)
    for chart in ("fitness", "best", "throughput", "speedup", "gantt", "nodes"):
        note = "Speedup waits for the first result" if chart == "speedup" else "No results yet"
        assert page.locator(f"#chart-{chart} .annotation-text").text_content() == note, chart
        assert page.locator(f"#chart-{chart} .xtick").count() == 0, chart  # no axis, so no year 2000
    # The first result, published as the loop would (from another thread: Playwright's loop runs in this one).
    first = Individual.objects.create(search=search, number=0, genome={}, key="first", status="done", fitness=0.9,
                                      node="node0", device="cpu", slot="node0/cpu/0", started=search.created,
                                      finished=search.created, duration=1.0, description="first")
    thread = threading.Thread(target=broadcast.notify,
                              args=(search.pk, "individual.finished", broadcast.individual_event(first)))
    thread.start()
    thread.join()
    page.wait_for_function("() => window.nasLive.pointCount() === 1", timeout=60_000)
    page.wait_for_function("() => document.querySelectorAll('#chart-fitness .xtick').length > 0", timeout=60_000)
    assert page.locator("#chart-fitness .annotation-text").count() == 0
    ticks = " ".join(page.eval_on_selector_all("#chart-fitness .xtick", "ticks => ticks.map((t) => t.textContent)"))
    assert str(search.created.year) in ticks or ":" in ticks, ticks
    assert "2000" not in ticks
    # a lone first point gets a minute of time axis, not a millisecond (issue 36, item 3)
    span = page.evaluate("() => { const a = document.getElementById('chart-fitness')._fullLayout.xaxis;"
                         " return a.r2l(a.range[1]) - a.r2l(a.range[0]); }")
    assert span >= 60_000, span
