"""Issue 36's page-state matrix in Chromium: the search page at 0, 1, 2 and many results, with an attempt lost,
stopped before its first result, and when every evaluation failed, checked on what plotly drew (axis ranges
from ``_fullLayout``, point counts, the panels' notes) and on the summary line's text, never on pixels; then
the same states on the search list, an individual's page (one epoch, failed, lost and retried, running before
its first report) and the nodes page with no worker and with one.

The states are written as a search's loop writes them (``webapp.searches.accounting`` for the stats, rows of
individuals), so one web server serves the whole matrix. With ``NAS_SHOTS_DIR`` set, each page is also saved
there as a screenshot."""
from __future__ import annotations

import datetime as dt
import os
import re
import time
from pathlib import Path

import pytest

from tests.browser.live_stack import sign_in
from webapp.dashboard import charts
from webapp.searches import accounting
from webapp.dashboard.curve_chart import CURVE_WAITS
from webapp.searches.models import Individual, Search, Worker
from webapp.services import lifecycle

pytestmark = [pytest.mark.browser, pytest.mark.integration]
CONFIG = {"space": {"name": "chain", "max_layers": 3},
          "strategy": {"name": "regularized", "seed": 1, "params": {"population": 4, "sample_size": 2,
                                                                    "max_evaluations": 30}},
          "training": {"epochs": 1}, "evaluation": {"mode": "simulated", "duration": 1.0}}
SLOTS = ["vm/cpu/0", "vm/cpu/1"]

#: What a chart drew: its points, per trace, and its axes' ranges as numbers (epoch ms on date axes).
DRAWN = """(id) => {
  const el = document.getElementById('chart-' + id);
  if (!el || !el._fullLayout) return null;
  const L = el._fullLayout;
  const range = (a) => (a && a.visible !== false && a.type !== 'category') ? a.range.map((v) => a.r2l(v)) : null;
  return {traces: el.data.map((t) => ({name: t.name, mode: t.mode,
                                       n: Array.from(t.x || []).filter((x) => x !== null).length,
                                       y: Array.from(t.y || [])})),
          x: range(L.xaxis), y: range(L.yaxis), y2: L.yaxis2 ? range(L.yaxis2) : null,
          notes: (L.annotations || []).map((a) => a.text)};
}"""


def when(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc)


def crafted(owner, name: str, *, results: list[tuple[bool, float, float]], running_for: float,
            status: str = Search.Status.RUNNING, reason: str = "", lost: bool = False) -> Search:
    """A search launched ``running_for`` seconds ago, its loop having sampled its two slots all along, with
    ``results`` as ``(ok, duration, finished after launch)``; stopped or ended at the end when ``status`` says so."""
    search = lifecycle.create_search(owner, name, CONFIG)
    start = time.time() - running_for
    stats = accounting.new_stats(start)
    rows = []
    for number, (ok, duration, after) in enumerate(results):
        slot = SLOTS[number % 2]
        fitness = 0.8 + 0.01 * (number % 15) if ok else None
        accounting.count_result(stats, node="vm", device="cpu", slot=slot, ok=ok, duration=duration,
                                finished=start + after, nbytes=100)
        rows.append(Individual(
            search=search, number=number, genome={}, key=f"k{number}", description=f"arch {number}",
            status="done" if ok else "failed", fitness=fitness, failure="" if ok else "DatasetMissing",
            node="vm", device="cpu", slot=slot, attempts=1, started=when(start + after - duration),
            finished=when(start + after), duration=duration, dispatched=when(start),
            curve=[{"epoch": 1, "val_accuracy": fitness, "val_loss": 0.5}] if ok else []))
    if lost:  # its worker was killed; the slot's next evaluation started: queued again
        rows.append(Individual(search=search, number=len(rows), genome={}, key="lost", description="lost one",
                               status="queued", attempts=1, node="vm", device="cpu", slot=SLOTS[0],
                               dispatched=when(start + running_for - 1)))
    Individual.objects.bulk_create(rows)
    accounting.add_slot_time(stats, 2 * running_for, as_of=start + running_for)
    if status != Search.Status.RUNNING:
        accounting.end_period(stats, start + running_for)
    done = [ok for ok, _, _ in results]
    search.stats, search.status, search.status_reason = stats, status, reason
    search.evaluations_done, search.evaluations_total = len(done), 30
    search.best_fitness = max((r.fitness for r in rows if r.fitness is not None), default=None)
    search.started = when(start)
    search.finished = when(start + running_for) if status in (Search.Status.FINISHED, Search.Status.FAILED) else None
    search.save()
    return search


def shoot(page, shot: str) -> None:
    """The page as a screenshot in ``NAS_SHOTS_DIR`` when it is set (for people: nothing compares pixels)."""
    shots = os.environ.get("NAS_SHOTS_DIR")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(shots) / f"{shot}.png"), full_page=True)


def show(page, web: str, search: Search, shot: str) -> dict:
    page.goto(f"{web}/searches/{search.pk}/")
    page.wait_for_function("() => document.getElementById('search-page').dataset.points !== undefined")
    page.wait_for_timeout(300)  # plotly's last relayouts
    shoot(page, shot)
    drawn = {name: page.evaluate(DRAWN, name) for name in ("fitness", "best", "throughput", "speedup", "curves")}
    drawn["speedup_text"] = page.inner_text("#speedup-value")
    drawn["efficiency_text"] = page.inner_text("#efficiency-value")
    drawn["body"] = page.inner_text("body")
    return drawn


def points(chart: dict) -> int:
    return sum(trace["n"] for trace in chart["traces"])


def line_numbers(text: str) -> tuple[float, float]:
    speedup, ideal = re.fullmatch(r"([\d.]+) of ([\d.]+)", text).groups()
    return float(speedup), float(ideal)


def assert_truthful(drawn: dict) -> None:
    """What holds on every page at every moment."""
    assert not re.search(r"\binf|NaN|e\+\d|e-\d{2}", drawn["speedup_text"] + drawn["efficiency_text"])
    speedup = drawn["speedup"]
    if points(speedup):
        assert speedup["y2"] == [0, charts.EFFICIENCY_RANGE[1]], "the efficiency axis spans 0-100%"
        trace = {t["name"]: t for t in speedup["traces"]}
        assert all(0 <= y <= 1 for y in trace["efficiency"]["y"])
        assert all(s <= i + 1e-9 for s, i in zip(trace["speedup"]["y"], trace["ideal"]["y"]))
        value, ideal = line_numbers(drawn["speedup_text"])
        assert value <= ideal and abs(trace["ideal"]["y"][-1] - ideal) < 0.051, "the chart's ideal is the line's"
    for name in ("fitness", "best", "curves"):
        if points(drawn[name]):
            low, high = drawn[name]["y"]  # an accuracy: [0, 1] and room for a marker's half
            assert charts.UNIT_CLIP[0] <= low < high <= charts.UNIT_CLIP[1], (name, drawn[name]["y"])
    for name in ("fitness", "best", "throughput", "speedup"):
        if points(drawn[name]):
            low, high = drawn[name]["x"]
            assert high - low >= 2 * charts.TIME_PAD_MS, (name, "a window of a minute at least")


def test_the_search_page_says_only_what_is_true_in_every_state(page, web, django_user_model):
    owner = django_user_model.objects.create_user(username="ada", password="a-long-password-1")
    sign_in(page, web, owner)

    # Running, no result yet: the line and the charts say what they wait for.
    early_search = crafted(owner, "early", results=[], running_for=3.0)
    early = show(page, web, early_search, "early")
    assert_truthful(early)
    assert early["speedup_text"] == "— (waits for the first result)" and early["efficiency_text"] == "—"
    assert early["speedup"]["notes"] == [charts.SPEEDUP_WAITS]
    assert all(early[name]["notes"] == [charts.NO_RESULTS] for name in ("fitness", "best", "throughput"))
    assert early["curves"]["notes"] == ["No learning curve yet"]

    # Stopped 3 s after launch, before any result (issue 36, item 1: was "0.00 of 5209334850.3").
    stopped_search = crafted(owner, "stopped", results=[], running_for=3.0, status=Search.Status.STOPPED,
                             reason="stopped by its owner")
    stopped = show(page, web, stopped_search, "stopped")
    assert_truthful(stopped)
    assert stopped["speedup_text"] == "— (waits for the first result)"
    assert stopped["speedup"]["notes"] == [charts.SPEEDUP_WAITS]

    # One result (item 3): a visible point on every chart, a minute of time axis, accuracy within [0, 1]; an
    # attempt lost with its worker says so (item 7).
    one_search = crafted(owner, "one", results=[(True, 4.0, 5.0)], running_for=6.0, lost=True)
    one = show(page, web, one_search, "one")
    assert_truthful(one)
    for name in ("fitness", "best", "throughput", "speedup", "curves"):
        assert points(one[name]) >= 1 and not one[name]["notes"], name
        assert all("markers" in (t["mode"] or "") for t in one[name]["traces"] if t["n"]), name
    page.wait_for_selector("#individuals")
    assert "lost, retrying (attempt 2)" in page.inner_text("#individuals")

    # Two results, one per slot: one trace per chart line, two points each.
    two_search = crafted(owner, "two", results=[(True, 3.0, 4.0), (True, 3.5, 5.0)], running_for=6.0)
    two = show(page, web, two_search, "two")
    assert_truthful(two)
    assert points(two["fitness"]) == 2 and points(two["best"]) == 2 and len(two["curves"]["traces"]) == 2

    # Many results, one epoch each (item 4: every curve a point, no "No results yet").
    many_search = crafted(owner, "many", results=[(i % 9 != 4, 3.5, 4.0 + 2 * i) for i in range(30)],
                          running_for=70.0, status=Search.Status.FINISHED)
    many = show(page, web, many_search, "many")
    assert_truthful(many)
    assert points(many["fitness"]) == 30 and len(many["curves"]["traces"]) == 27 and not many["curves"]["notes"]

    # Every evaluation failed (item 5): failed, with the reason, on the page, the list and the API.
    reason = "all 6 evaluations failed: DatasetMissing"
    failed_search = crafted(owner, "all failed", results=[(False, 0.5, 1.0 + i) for i in range(6)],
                            running_for=8.0, status=Search.Status.FAILED, reason=reason)
    failed = show(page, web, failed_search, "all-failed")
    assert_truthful(failed)
    assert page.inner_text("#search-status") == "failed" and page.inner_text("#status-reason") == reason
    assert failed["best"]["notes"] == [charts.NO_SUCCESS] and points(failed["fitness"]) == 6
    answer = page.request.get(f"{web}/api/searches/{failed_search.pk}/").json()
    assert (answer["status"], answer["status_reason"]) == ("failed", reason)

    searches = {"early": early_search, "stopped": stopped_search, "one": one_search, "two": two_search,
                "many": many_search, "all failed": failed_search}
    check_the_list(page, web, searches, reason)
    check_individual_pages(page, web, one_search, failed_search, early_search)
    check_the_nodes_page(page, web)


#: The search list's rows by name: each cell's text and the progress bar's value.
LIST_ROWS = """() => Object.fromEntries(Array.from(document.querySelectorAll('#search-grid tbody tr')).map((tr) => [
  tr.querySelector('td:nth-child(2) a').textContent.trim(),
  {cells: Array.from(tr.cells).map((td) => td.innerText.trim()),
   progress: Number(tr.querySelector('progress').getAttribute('value').replace(',', '.'))}]))"""


def check_the_list(page, web: str, searches: dict[str, Search], reason: str) -> None:
    """Each state's row says its true state, its best value ("—" with none), its progress, and for a search
    whose every evaluation failed, the reason."""
    page.goto(f"{web}/searches/")
    page.wait_for_selector("#search-grid tbody tr")  # Grid.js's table, filled from the server
    shoot(page, "list")
    rows = page.evaluate(LIST_ROWS)
    expected = {"early": ("running", "—", 0), "stopped": ("stopped", "—", 0), "one": ("running", "0.8000", 1),
                "two": ("running", "0.8100", 2), "many": ("finished", "0.9400", 30),
                "all failed": ("failed " + reason, "—", 6)}
    for name, (state, best, done) in expected.items():
        search = searches[name]
        search.refresh_from_db()
        assert search.evaluations_done == done, name
        cells = rows[name]["cells"]  # tick, name, owner, space, strategy, state, progress, best, started, duration
        assert (cells[5], cells[7]) == (state, best), (name, cells)
        assert cells[6] == f"{done}/30" and abs(rows[name]["progress"] - 100 * done / 30) < 0.051, (name, rows[name])


def check_individual_pages(page, web: str, one: Search, failed: Search, early: Search) -> None:
    """An individual's page with a one-epoch curve, a failure, a lost attempt and no progress point yet."""
    def visit(search: Search, number: int, shot: str) -> None:
        answer = page.goto(f"{web}/searches/{search.pk}/individuals/{number}/")
        assert answer.status == 200, (shot, answer.status)
        shoot(page, shot)

    # One epoch: a visible marker per series, the accuracy axis within [0, 1].
    visit(one, 0, "individual-one-epoch")
    page.wait_for_function("() => { const el = document.getElementById('chart-curve'); return el && el._fullLayout; }")
    curve = page.evaluate(DRAWN, "curve")
    assert curve["traces"] and all(t["n"] == 1 and "markers" in t["mode"] for t in curve["traces"]), curve
    low, high = curve["y2"]
    assert charts.UNIT_CLIP[0] <= low < high <= charts.UNIT_CLIP[1], curve["y2"]
    assert page.inner_text("#individual-state") == "done"

    # Failed: why, in words, on its page (no traceback page).
    Individual.objects.filter(search=failed, number=0).update(
        message="DatasetMissing: cifar10 is not installed under NAS_DATA_DIR")
    visit(failed, 0, "individual-failed")
    why = page.inner_text("#why-failed")
    assert "DatasetMissing" in why and "cifar10 is not installed" in why, why
    assert page.inner_text("#individual-state") == "failed"

    # Its attempt lost with its worker, waiting to run again: says so, as the table does.
    visit(one, 1, "individual-lost")
    assert page.inner_text("#individual-state") == "lost, retrying (attempt 2)"

    # Running, before its first epoch's report: the curve panel says what it waits for, no bare axes.
    Individual.objects.create(search=early, number=0, genome={}, key="k0", description="arch 0", status="running",
                              attempts=1, node="vm", device="cpu", slot=SLOTS[0], dispatched=early.started,
                              started=early.started, curve=[])
    visit(early, 0, "individual-running")
    assert page.inner_text("#individual-state") == "running"
    assert page.inner_text("#curve-waits p") == CURVE_WAITS
    assert page.query_selector("#chart-curve") is None


def check_the_nodes_page(page, web: str) -> None:
    """No worker seen: the page says how to start one. One (its heartbeat stale): its row, with what it did."""
    page.goto(f"{web}/nodes/")
    shoot(page, "nodes-0")
    assert page.query_selector("#workers") is None
    assert "No evaluation worker has been seen yet" in page.inner_text("body")

    Worker.objects.create(name=SLOTS[1], node="vm", device="cpu", slot=1, slots=2,
                          last_seen=dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=1))
    page.goto(f"{web}/nodes/")
    shoot(page, "nodes-1")
    cells = page.evaluate("() => Array.from(document.querySelectorAll('#workers tbody tr'))"
                          ".map((tr) => Array.from(tr.cells).map((td) => td.innerText.trim()))")
    evaluated = Individual.objects.filter(slot=SLOTS[1]).count()
    failed = Individual.objects.filter(slot=SLOTS[1], status="failed").count()
    assert len(cells) == 1 and cells[0][0] == SLOTS[1], cells
    assert cells[0][5:9] == ["stale", "idle", str(evaluated), str(failed)], cells
