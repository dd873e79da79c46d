"""The search list sorted by best in Grid.js, then two and three searches compared in Chromium: every chart drawn
with a trace per search, the configurations' differences marked, the CSV offered. The compare page needs no
websocket (it polls), so Django's live server is enough here. Screenshots go to ``STATE_DIR/screenshots`` (copy
``compare.png`` to ``static/img/`` by hand when the page changes: a test run never rewrites a tracked file)."""
from __future__ import annotations

import datetime as dt
import json
import math
import time

import pytest

from tests.browser.live_stack import sign_in
from tests.browser.test_security import Watch
from webapp.searches import accounting
from webapp.searches.models import Individual, Search
from webapp.services import lifecycle

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BASE = {"space": {"name": "chain", "max_layers": 4}, "evaluation": {"mode": "simulated", "duration": 0.1},
        "training": {"epochs": 2}}
MULTI = {"name": "nsga2", "seed": 0, "params": {"population": 8, "generations": 20, "max_evaluations": 200,
                                                  "objectives": [["fitness", "max"], ["params", "min"]]}}


def recorded(owner, name: str, strategy: dict, count: int, ceiling: float, pace: float, status="finished") -> Search:
    """A search with ``count`` results whose fitness climbs towards ``ceiling``, ``pace`` seconds apart, written
    as its loop would have recorded them (accounting included)."""
    search = lifecycle.create_search(owner, name, {**BASE, "strategy": strategy})
    start = time.time() - 3600
    search.stats = accounting.new_stats(start)
    rows, best = [], None
    for i in range(count):
        finished = start + 1 + i * pace
        fitness = ceiling * (1 - 0.45 * math.exp(-i / (count / 4))) - 0.04 * ((i * 7919) % 13) / 13
        best = fitness if best is None else max(best, fitness)
        params = 2000 + ((i * 104729) % 97) * 900
        rows.append(Individual(search=search, number=i, genome={"layers": []}, key=f"{name}-{i}",
                               description=f"{1 + i % 4} layers", status="done", fitness=fitness,
                               metrics={"params": params, "accuracy": fitness}, node="n0", device="cpu",
                               slot="n0/cpu/0", duration=pace * 2,
                               started=dt.datetime.fromtimestamp(finished - pace * 2, dt.timezone.utc),
                               finished=dt.datetime.fromtimestamp(finished, dt.timezone.utc)))
        accounting.count_result(search.stats, node="n0", device="cpu", slot=f"n0/cpu/{i % 2}", ok=True,
                                duration=pace * 2, finished=finished, nbytes=0)
    Individual.objects.bulk_create(rows)
    accounting.end_period(search.stats, start + 1 + count * pace)
    search.status, search.evaluations_done, search.best_fitness = status, count, best
    search.started = dt.datetime.fromtimestamp(start, dt.timezone.utc)
    search.finished = dt.datetime.fromtimestamp(start + 1 + count * pace, dt.timezone.utc)
    search.save()
    return search


NAMES = "() => Array.from(document.querySelectorAll('#search-grid tbody tr td:nth-child(2) a')).map((a) => a.textContent)"


def wait_for_names(page, names: list[str]) -> None:
    page.wait_for_function(f"() => JSON.stringify(({NAMES})()) === {json.dumps(json.dumps(names, separators=(',', ':')))}")


def test_list_sorted_by_best_then_compare(page, live_server, settings, redis_url, django_user_model):
    settings.REDIS_URL = redis_url
    owner = django_user_model.objects.create_user(username="ada", password="a-long-password-1")
    regularized = {"name": "regularized", "seed": 0, "params": {"population": 8, "sample_size": 3,
                                                                  "max_evaluations": 200}}
    a = recorded(owner, "nsga2 pop 8", MULTI, 120, 0.95, 2.0)
    b = recorded(owner, "nsga2 pop 16", {**MULTI, "params": {**MULTI["params"], "population": 16}}, 160, 0.97, 1.5)
    c = recorded(owner, "regularized", regularized, 80, 0.90, 3.0, status="running")
    sign_in(page, live_server.url, owner)
    watch = Watch(page)  # Grid.js and the compare page's scripts within the Content-Security-Policy

    # The list: Grid.js draws it (the plain table hidden), sorts by best on the server, both ways.
    page.goto(live_server.url + "/searches/")
    page.wait_for_selector("#search-grid tbody tr")
    assert page.locator("#search-list").is_hidden()
    # the first row drawn may be Grid.js's loading row: wait for the names themselves (a busy machine lags)
    wait_for_names(page, ["regularized", "nsga2 pop 16", "nsga2 pop 8"])  # newest first
    header = page.locator("#search-grid th", has_text="Best fitness")
    header.click()
    wait_for_names(page, ["regularized", "nsga2 pop 8", "nsga2 pop 16"])  # ascending
    header.click()
    wait_for_names(page, ["nsga2 pop 16", "nsga2 pop 8", "regularized"])  # best first
    bests = page.evaluate("() => Array.from(document.querySelectorAll('#search-grid tbody tr td:nth-child(8)'))"
                          ".map((td) => Number(td.textContent))")
    assert bests == sorted(bests, reverse=True)
    row = page.locator("#search-grid tbody tr").first.inner_text()
    assert "ada" in row and "finished" in row and "160/200" in row  # owner, state, progress of the plan

    watch.clean("the list")

    # Tick two searches: Compare opens the page with both.
    assert page.locator("#compare-button").is_disabled()
    page.check(f"#search-grid input[data-search='{b.pk}']")
    page.check(f"#search-grid input[data-search='{a.pk}']")
    page.click("#compare-button")
    page.wait_for_url(f"**/compare/?ids={b.pk},{a.pk}")
    page.wait_for_function("() => Number(document.getElementById('compare-page').dataset.drawn) >= 1")
    for chart in ("best-evaluations", "best-time", "pareto-0"):
        traces = page.evaluate(f"() => document.getElementById('chart-{chart}').data.map((t) => t.name)")
        assert traces == [f"#{b.pk} nsga2 pop 16", f"#{a.pk} nsga2 pop 8"], chart
        assert page.locator(f"#chart-{chart} .scatterlayer .trace").count() == 2, chart  # drawn, not just data
    differs = page.locator("#compare-config tr.differs td code").all_inner_texts()
    assert differs == ["strategy.params.population"]
    assert page.locator("#compare-csv").get_attribute("href").endswith(f"ids={b.pk},{a.pk}")

    # Three, one of them running: its table row and charts come from the poll too.
    page.set_viewport_size({"width": 1300, "height": 1500})
    page.goto(f"{live_server.url}/compare/?ids={a.pk},{b.pk},{c.pk}")
    page.wait_for_function("() => Number(document.getElementById('compare-page').dataset.drawn) >= 2",
                           timeout=60_000)  # the first poll's redraw (a search runs)
    assert page.locator("#compare-live").inner_text().startswith("live")
    assert page.evaluate("() => document.getElementById('chart-best-time').data.length") == 3
    assert page.evaluate("() => document.getElementById('chart-pareto-0').data.length") == 2  # c has no front
    speedup = page.locator(f"#compare-table tr[data-search='{c.pk}'] [data-field=speedup]").inner_text()
    assert " of " in speedup
    watch.clean("the compare page")
    page.wait_for_timeout(300)  # plotly's last relayouts
    shots = settings.STATE_DIR / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / "compare.png"), full_page=True)
