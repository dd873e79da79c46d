"""The pages of a big search and of a comparison: what a user waits for when opening a search of 10,000
individuals (the page, its table, its snapshot), the search list sorted by best, and two such searches compared.

Against the real web server (``manage.py web``, one process) over a real Redis; the searches are written in
bulk (``benchmarks.bulk``), no worker runs. With ``--browser``, Chromium (Playwright) also opens the search page
and times when it is shown, when the first page of the table is in it, and when every point is drawn. Run from
the repository root::

    .venv/bin/python benchmarks/big_pages.py                  # two searches of 10,000 individuals
    .venv/bin/python benchmarks/big_pages.py --individuals 2000 --browser
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.dashboard import session_cookie, start_web, timed_get  # noqa: E402
from benchmarks.report import Report, command_line, table  # noqa: E402
from benchmarks.stack import Stack, main_guard  # noqa: E402

CHROMIUM = "/usr/bin/chromium"


def in_browser(url: str, cookie: str, search_id: int, individuals: int) -> list[list[str]]:
    """Seconds from the start of navigation until the page is shown, the table's first page is in it, and every
    point is drawn (the snapshot's charts)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])
        context = browser.new_context()
        name, value = cookie.split("=", 1)
        context.add_cookies([{"name": name, "value": value, "url": url}])
        page = context.new_page()
        # When the table's first rows and the first chart enter the page, by the page's own clock (a check from
        # here would wait for the main thread, busy drawing the charts, and see both late).
        page.add_init_script("""
          window.__seen = {};
          new MutationObserver(() => {
            if (!window.__seen.table && document.querySelector('#individuals tbody tr')) window.__seen.table = performance.now();
            if (!window.__seen.chart && document.querySelector('#chart-fitness .main-svg')) window.__seen.chart = performance.now();
          }).observe(document, {childList: true, subtree: true});
        """)
        started = time.perf_counter()
        page.goto(f"{url}/searches/{search_id}/", wait_until="domcontentloaded", timeout=300_000)
        shown = time.perf_counter() - started
        # The first paint of the page's content, on the same clock (navigation start is performance's zero).
        page.wait_for_function("() => performance.getEntriesByName('first-contentful-paint').length > 0",
                               timeout=300_000)
        painted = page.evaluate("() => performance.getEntriesByName('first-contentful-paint')[0].startTime") / 1000
        page.wait_for_function(f"() => window.nasLive && window.nasLive.pointCount() === {individuals}",
                               timeout=300_000)
        drawn = time.perf_counter() - started
        seen = page.evaluate("() => window.__seen")
        table_in, chart_in = seen["table"] / 1000, seen["chart"] / 1000
        browser.close()
    return [["first contentful paint", f"{painted:.2f}"], ["DOMContentLoaded (plotly.js parsed)", f"{shown:.2f}"],
            ["table's first page in the page", f"{table_in:.2f}"], ["first chart in the page", f"{chart_in:.2f}"],
            [f"all {individuals:,} points drawn", f"{drawn:.2f}"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--individuals", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5, help="GETs per page timed")
    parser.add_argument("--browser", action="store_true", help="also time the search page in Chromium")
    parser.add_argument("--output", default="big_pages")
    args = parser.parse_args()
    report = Report(args.output, "A big search's pages, the search list and a comparison", command_line(None, "big_pages.py"))
    with Stack(control=False) as stack:
        from django.contrib.auth import get_user_model

        from benchmarks.bulk import bulk_search

        owner = get_user_model().objects.create_user("viewer", password="bench-password-1")
        first = bulk_search(owner, args.individuals, name="first")
        second = bulk_search(owner, args.individuals, nodes=4, name="second")
        url, _ = start_web(stack, server="web", workers=1, access_log=False)
        cookie = session_cookie(owner)
        ids = f"{first.pk},{second.pk}"
        pages = [
            ("search page (HTML)", f"{url}/searches/{first.pk}/"),
            ("its table, first page (HTML fragment)", f"{url}/searches/{first.pk}/table/"),
            ("its table sorted by fitness", f"{url}/searches/{first.pk}/table/?sort=-fitness"),
            ("its snapshot (charts of every point)", f"{url}/api/searches/{first.pk}/snapshot/"),
            ("search list (HTML)", f"{url}/searches/"),
            ("search list rows sorted by best (JSON)", f"{url}/searches/rows/?sort=-best"),
            ("compare page of the two", f"{url}/compare/?ids={ids}"),
            ("compare data, as the page polls it", f"{url}/api/compare/?ids={ids}"),
            ("CSV of both", f"{url}/compare/searches.csv?ids={ids}"),
        ]
        rows = []
        for label, address in pages:
            first_time = timed_get(address, cookie, 1)[0]  # cold: the snapshot is built here
            median, worst, wire, size = timed_get(address, cookie, args.repeat)
            rows.append([label, f"{first_time * 1000:.0f}", f"{median * 1000:.0f}", f"{worst * 1000:.0f}",
                         f"{wire / 1024:.0f}", f"{size / 1024:.0f}"])
            print(f"{label}: first {first_time * 1000:.0f} ms, then {median * 1000:.0f} ms", flush=True)
        report.add(f"Two searches of {args.individuals:,} individuals each, served by `manage.py web` (one "
                   f"process); the first GET, then the median and max of {args.repeat} more.\n\n"
                   + table(["request", "first ms", "median ms", "max ms", "KiB sent (gzip)", "KiB inflated"], rows))
        if args.browser:
            report.add("Chromium opening the first search (seconds from the start of navigation):\n\n"
                       + table(["moment", "seconds"], in_browser(url, cookie, first.pk, args.individuals)))
    print(f"written to {report.path}")


if __name__ == "__main__":
    main_guard(main)
