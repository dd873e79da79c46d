"""Many viewers of one running search: N keep-alive HTTP clients against the real web server.

Each client is a thread with its own keep-alive connection (``http.client``) and its own session (one user,
signed in N times, as N browser tabs would be), and cycles without pause over what a live page and a script
ask for: the search page (``/searches/<id>/``), its snapshot (``/api/searches/<id>/snapshot/``, gzip
accepted as a browser does) and its first page of individuals (``/api/searches/<id>/individuals/``). Printed:
requests/s and p50 / p95 / max per URL, and how many results the loop recorded meanwhile.

The search really runs (``benchmarks/stack.py``: Redis, a control worker, evaluation workers with simulated
evaluations): it is first filled to ``--individuals`` results by workers that do not sleep, then ``--slots``
slots evaluate one individual per ``--duration`` seconds each while the clients run, so the loop records
results, writes events and bumps the search's sequence number all through the measurement (8 slots of 1 s:
about 8 results and 30 events a second, far more than a real search's, so the database is written all the
time). The default search, 3,000 individuals, is about a day of a 20-GPU search of ten-minute evaluations: the
size at which a page is opened, not an extreme (``benchmarks/dashboard.py`` times 10,000).

The web server is the one deployed: ``manage.py web`` (``--server web``, the default; ``--web-workers N``
uvicorn processes), one plain daphne process (``--server daphne``) or the plain ``uvicorn --workers`` command
(``--server uvicorn``). Several are measured in turn on the same search (``--server web daphne``, ``--rounds``:
the order reversed every other round), with ``--ws-viewers`` websocket viewers following the search's events
besides the HTTP clients. ``--profile`` runs one daphne process under ``benchmarks/sampler.py`` and adds where
its threads were to the report. Run from the repository root::

    .venv/bin/python benchmarks/dashboard_clients.py                         # 20 clients, 30 s
    .venv/bin/python benchmarks/dashboard_clients.py --server web uvicorn --web-workers 2 --ws-viewers 1000 \
        --rounds 2 --slots 1 --duration 4 --output web-servers               # results/web-servers.md
    .venv/bin/python benchmarks/dashboard_clients.py --clients 1 --output dashboard-clients-1

What its profile showed, with one daphne process on 2 cores, and what was done about each:
``benchmarks/results/dashboard-clients-profile.md``.
"""
from __future__ import annotations

import argparse
import http.client
import os
import statistics
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.dashboard import percentile, session_cookie, start_web  # noqa: E402
from benchmarks.report import Report, command_line, table  # noqa: E402
from benchmarks.process_usage import Usage, connections_per_process, cpu_seconds, machine_busy  # noqa: E402
from benchmarks.sampler import summary  # noqa: E402
from benchmarks.stack import Node, Stack, main_guard, simulated_config  # noqa: E402
from webapp.stack.processes import Supervisor  # noqa: E402


#: Seconds between two viewers' first requests.
ARRIVAL = 0.1


@dataclass
class Samples:
    """Latencies (seconds), bytes and failures of one URL, across every client."""

    latencies: list[float] = field(default_factory=list)
    nbytes: list[int] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)


def client(host: str, port: int, cookie: str, urls: list[tuple[str, str]], start: int, stop: threading.Event,
           measuring: threading.Event, samples: dict[str, Samples], lock: threading.Lock) -> None:
    """One viewer: GET each of ``urls`` in turn (from ``start``) until ``stop``; keeps what it measured while
    ``measuring`` is set. A dropped connection is counted as a failure and reopened."""
    connection = http.client.HTTPConnection(host, port, timeout=120)
    headers = {"Cookie": cookie, "Accept-Encoding": "gzip", "Connection": "keep-alive"}
    turn = start
    while not stop.is_set():
        label, path = urls[turn % len(urls)]
        turn += 1
        started = time.perf_counter()
        try:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            body = response.read()
            outcome = None if response.status == 200 else f"HTTP {response.status}"
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            connection = http.client.HTTPConnection(host, port, timeout=120)
            body, outcome = b"", type(error).__name__
        elapsed = time.perf_counter() - started
        if measuring.is_set():
            with lock:
                entry = samples[label]
                if outcome is None:
                    entry.latencies.append(elapsed)
                    entry.nbytes.append(len(body))
                else:
                    entry.failures[outcome] = entry.failures.get(outcome, 0) + 1
    connection.close()


def fill(stack: Stack, args: argparse.Namespace) -> tuple[int, str, float]:
    """A running search of ``args.individuals`` results; its id, its pool and the seconds it took."""
    from django.contrib.auth import get_user_model

    from webapp.searches.models import Search
    from webapp.services import lifecycle

    owner = get_user_model().objects.create_user("viewer", password="bench-password-1")
    fast = [Node(f"fill{i}", slots=4, slowdown=0.0) for i in range(2)]
    started = time.perf_counter()
    with stack.workers(fast) as pool:
        params = {"population": 50, "sample_size": 5, "max_evaluations": 1_000_000}
        config = simulated_config(pool, "regularized", params, duration=args.duration, space="pelee")
        search = lifecycle.create_search(owner, "watched by many", config)
        lifecycle.launch(search)
        while Search.objects.filter(pk=search.pk).values_list("evaluations_done", flat=True).get() < args.individuals:
            time.sleep(0.5)
    return search.pk, pool, time.perf_counter() - started


def progress(search_id: int) -> tuple[int, int]:
    from webapp.searches.models import Search

    return Search.objects.filter(pk=search_id).values_list("evaluations_done", "event_seq").get()


def measure(url: str, cookies: list[str], urls: list[tuple[str, str]], seconds: float, warmup: float,
            web_pid: int) -> tuple[dict[str, Samples], tuple[float, float], Usage]:
    """Run one client per cookie for ``warmup`` + ``seconds``; the samples of the last ``seconds``, when they
    began and ended (epoch seconds) and the CPU used meanwhile."""
    host, port = url.split("//")[1].split(":")
    samples = {label: Samples() for label, _ in urls}
    stop, measuring, lock = threading.Event(), threading.Event(), threading.Lock()
    threads = [threading.Thread(target=client, daemon=True,
                                args=(host, int(port), cookie, urls, i, stop, measuring, samples, lock))
               for i, cookie in enumerate(cookies)]
    for thread in threads:
        # Viewers arrive one after another, as pages are opened, not in the same millisecond.
        thread.start()
        time.sleep(ARRIVAL)
    time.sleep(warmup)
    usage = Usage(-cpu_seconds(web_pid), -sum(os.times()[:2]), -machine_busy())
    usage.spread = connections_per_process(web_pid, int(port))
    measuring.set()
    window = time.time()
    time.sleep(seconds)
    measuring.clear()
    window = (window, time.time())
    usage.web += cpu_seconds(web_pid)
    usage.clients += sum(os.times()[:2])
    usage.machine += machine_busy()
    stop.set()
    for thread in threads:
        thread.join(timeout=150)
    return samples, window, usage


class Sockets:
    """``count`` websocket viewers of the search (``tests.dashboard.ws_viewers``, a process of their own),
    opened in waves as pages are, and what they measured: each event's delay from its writing to its arrival."""

    def __init__(self, url: str, search_id: int, cookie: str, count: int) -> None:
        import json
        import subprocess

        self.json = json
        self.process = subprocess.Popen([sys.executable, "-m", "tests.dashboard.ws_viewers", url.split("//")[1],
                                         str(search_id), cookie], cwd=ROOT, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        self.opened, self.failed = 0, {}
        for start in range(0, count, 100):  # a listen backlog of 1,000 handshakes at once would drop some
            answer = self("open", count=min(100, count - start), origin=None, timeout=120)
            self.opened += len(answer["opened"])
            for reason, n in answer["failed"].items():
                self.failed[reason] = self.failed.get(reason, 0) + n

    def __call__(self, op: str, **args) -> dict:
        self.process.stdin.write(self.json.dumps({"op": op, **args}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the websocket viewers' process ended (exit status {self.process.poll()})")
        return self.json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()  # its loop ends; the server sees every socket go
        self.process.wait(timeout=120)


def events_between(search_id: int, window: tuple[float, float]) -> int:
    """Events of the search written within ``window`` (epoch seconds)."""
    import datetime as dt

    from webapp.searches.models import Event

    since, until = (dt.datetime.fromtimestamp(t, dt.timezone.utc) for t in window)
    return Event.objects.filter(search_id=search_id, time__gte=since, time__lte=until).count()


@dataclass
class Run:
    """What one server served, over every round it ran."""

    samples: dict[str, Samples] = field(default_factory=dict)
    delays: Counter = field(default_factory=Counter)  #: milliseconds -> events delivered that late
    expected: int = 0  #: events written while measuring, times the viewers open
    seconds: float = 0.0
    results: int = 0
    events: int = 0
    usage: list[tuple[Usage, float]] = field(default_factory=list)
    sockets: list[str] = field(default_factory=list)


def one_round(stack: Stack, server: str, args: argparse.Namespace, search_id: int, cookies: list[str],
              urls: list[tuple[str, str]], run: Run) -> None:
    """Start ``server``, open the websocket viewers, run the HTTP viewers, stop it all; adds to ``run``."""
    web = Supervisor(out=stack.transcript, colour=False)
    url, web_pid = start_web(stack, server=server, workers=args.web_workers, supervisor=web, access_log=False)
    sockets = Sockets(url, search_id, cookies[0], args.ws_viewers) if args.ws_viewers else None
    try:
        done_before, seq_before = progress(search_id)
        samples, window, usage = measure(url, cookies, urls, args.seconds, args.warmup, web_pid)
        done_after, seq_after = progress(search_id)
        if sockets is not None:
            time.sleep(2)  # what was written by the end of the window is on its way
            answer = sockets("delays", since=window[0], until=window[1])
            run.delays.update({int(ms): n for ms, n in answer["delays"].items()})
            run.expected += events_between(search_id, window) * sockets.opened
            run.sockets.append(f"{sockets.opened} opened, {answer['closed']} closed by the server"
                               + (f", failed: {sockets.failed}" if sockets.failed else ""))
    finally:
        if sockets is not None:
            sockets.close()
        web.stop_all(grace=20)
    for label, entry in samples.items():
        total = run.samples.setdefault(label, Samples())
        total.latencies += entry.latencies
        total.nbytes += entry.nbytes
        for outcome, n in entry.failures.items():
            total.failures[outcome] = total.failures.get(outcome, 0) + n
    elapsed = window[1] - window[0]
    run.seconds += elapsed
    run.results += done_after - done_before
    run.events += seq_after - seq_before
    run.usage.append((usage, elapsed))


def delay_row(delays: Counter, expected: int, seconds: float) -> list[str]:
    """The websocket viewers' row: events delivered and their delays (ms), p50 / p95 / max."""
    ordered = sorted(delays.elements())
    share = f" ({100 * len(ordered) / expected:.1f} % of {expected:,})" if expected else ""
    return [f"events (websocket){share}", str(len(ordered)), f"{len(ordered) / seconds:.1f}",
            f"{percentile(ordered, 0.50):.0f}", f"{percentile(ordered, 0.95):.0f}",
            f"{max(ordered, default=float('nan')):.0f}", str(max(expected - len(ordered), 0)) if expected else "", ""]


def rows_of(samples: dict[str, Samples], elapsed: float) -> list[list[str]]:
    rows = []
    everything = [t for entry in samples.values() for t in entry.latencies]
    for label, entry in [*samples.items(), ("all", None)]:
        times = everything if entry is None else entry.latencies
        failures = sum(sum(e.failures.values()) for e in samples.values()) if entry is None else sum(
            entry.failures.values())
        size = "" if entry is None else f"{statistics.fmean(entry.nbytes) / 1024:.0f}" if entry.nbytes else "—"
        rows.append([label, str(len(times)), f"{len(times) / elapsed:.1f}",
                     f"{percentile(times, 0.50) * 1000:.0f}", f"{percentile(times, 0.95) * 1000:.0f}",
                     f"{max(times, default=float('nan')) * 1000:.0f}", str(failures), size])
    return rows


SERVERS = {"web": "`manage.py web`", "daphne": "one daphne process", "uvicorn": "`uvicorn --workers`"}
#: The kinds of URL the comparison is decided on, and the URLs of each.
KINDS = {"pages": ("search page",), "API": ("API: snapshot", "API: individuals")}


def p95_ms(run: Run, kind: str) -> float:
    if kind == "events":
        return percentile(sorted(run.delays.elements()), 0.95)
    return 1000 * percentile([t for label in KINDS[kind] for t in run.samples[label].latencies], 0.95)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20, help="keep-alive HTTP clients (default 20)")
    parser.add_argument("--ws-viewers", type=int, default=0, help="websocket viewers of the search besides them "
                        "(default 0)")
    parser.add_argument("--individuals", type=int, default=3000, help="results in the search before the clients "
                        "start (default 3000)")
    parser.add_argument("--seconds", type=float, default=30.0, help="measured seconds per round (default 30)")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of load before measuring (default 5)")
    parser.add_argument("--slots", type=int, default=8, help="evaluation slots while measuring (default 8)")
    parser.add_argument("--duration", type=float, default=1.0, help="seconds per evaluation while measuring")
    parser.add_argument("--server", choices=tuple(SERVERS), nargs="+", default=["web"],
                        help="`manage.py web` (default), one plain daphne process, `uvicorn --workers`; several: "
                        "each in turn on the same search, in the order given, reversed every other round")
    parser.add_argument("--rounds", type=int, default=1, help="times each server is measured (default 1)")
    parser.add_argument("--web-workers", type=int, default=None, help="processes of `manage.py web` and uvicorn "
                        "(default: their own, NAS_WEB_WORKERS and 1)")
    parser.add_argument("--profile", action="store_true", help="run one daphne process under benchmarks/sampler.py")
    parser.add_argument("--keep", action="store_true", help="keep the stack's folder (logs, the profile's stacks)")
    parser.add_argument("--output", default="dashboard-clients")
    args = parser.parse_args()
    report = Report(args.output, "Many viewers of a running search", command_line(None, "dashboard_clients.py"))
    if args.profile:
        profile_one(args, report)
        return
    runs = {server: Run() for server in args.server}
    with Stack(keep=args.keep) as stack:
        search_id, pool, filled = fill(stack, args)
        with stack.workers([Node("w0", slots=args.slots)], pool=pool):
            from django.contrib.auth import get_user_model

            owner = get_user_model().objects.get(username="viewer")
            cookies = [session_cookie(owner) for _ in range(args.clients)]
            urls = [("search page", f"/searches/{search_id}/"),
                    ("API: snapshot", f"/api/searches/{search_id}/snapshot/"),
                    ("API: individuals", f"/api/searches/{search_id}/individuals/")]
            first, _ = progress(search_id)
            for round_ in range(args.rounds):
                for server in args.server if round_ % 2 == 0 else args.server[::-1]:
                    print(f"round {round_ + 1}: {server}", flush=True)
                    one_round(stack, server, args, search_id, cookies, urls, runs[server])
            last, _ = progress(search_id)
    workers = f"{args.web_workers} processes each" if args.web_workers else "each its default processes"
    report.add(f"A running search of {first:,} to {last:,} individuals (filled in {filled:.0f} s), {args.slots} "
               f"slots of {args.duration:g} s evaluations all through. Each server ({workers}, no access log) is "
               f"started {args.rounds} time(s), in turn, on that search; in each round {args.clients} keep-alive "
               f"HTTP clients, each its own session, cycle over the three URLs without pause after {args.warmup:g} "
               f"s of warm-up" + (f", while {args.ws_viewers:,} websocket viewers follow the search's events" if
                                  args.ws_viewers else "") + f", for {args.seconds:g} measured seconds. HTTP times in "
               "ms, client side, from the request sent to the last byte read; an event's delay in ms, from its row's "
               "time (written by the search's loop) to its arrival at a websocket viewer.\n")
    for server, run in runs.items():
        rows = rows_of(run.samples, run.seconds)
        if args.ws_viewers:
            rows.append(delay_row(run.delays, run.expected, run.seconds))
        report.add(f"### {SERVERS[server]}\n\n{run.results} results and {run.events} events recorded during its "
                   f"{run.seconds:.0f} measured seconds.\n\n"
                   + table(["URL", "requests", "per s", "p50", "p95", "max", "failed", "KiB (mean, as sent)"], rows)
                   + "\n\n" + "; ".join(usage_line(usage, elapsed, run) for usage, elapsed in run.usage)
                   + ("\n\nWebsocket viewers: " + "; ".join(run.sockets) if run.sockets else ""))
    if len(runs) > 1:
        kinds = [*KINDS, *(["events"] if args.ws_viewers else [])]
        base, *others = runs
        rows = [[kind, f"{p95_ms(runs[base], kind):.0f}",
                 *(f"{p95_ms(runs[other], kind):.0f} ({p95_ms(runs[other], kind) / p95_ms(runs[base], kind):.2f}x)"
                   for other in others)] for kind in kinds]
        report.add("p95 in ms by kind of URL (pages: the search page; API: the snapshot and the individuals), "
                   f"against {SERVERS[base]}:\n\n" + table(["kind", *(SERVERS[name] for name in runs)], rows))


def usage_line(usage: Usage, elapsed: float, run: Run) -> str:
    return (f"CPU (cores busy, of {os.cpu_count()}): the web server {usage.web / elapsed:.2f}, the HTTP clients "
            f"{usage.clients / elapsed:.2f}, everything else (the websocket viewers, the loop, the workers, Redis, "
            f"other users of the machine) {(usage.machine - usage.web - usage.clients) / elapsed:.2f}; connections "
            f"held by each web process: {', '.join(map(str, usage.spread)) or 'unknown'}")


def profile_one(args: argparse.Namespace, report: Report) -> None:
    """One daphne process under ``benchmarks/sampler.py``, the HTTP clients only, and where its threads were."""
    with Stack(keep=args.keep) as stack:
        search_id, pool, filled = fill(stack, args)
        with stack.workers([Node("w0", slots=args.slots)], pool=pool):
            profile = stack.folder / "web-profile.json"
            web = Supervisor(out=stack.transcript, colour=False)
            url, web_pid = start_web(stack, server="daphne", profile=profile, supervisor=web)
            from django.contrib.auth import get_user_model

            owner = get_user_model().objects.get(username="viewer")
            cookies = [session_cookie(owner) for _ in range(args.clients)]
            urls = [("search page", f"/searches/{search_id}/"),
                    ("API: snapshot", f"/api/searches/{search_id}/snapshot/"),
                    ("API: individuals", f"/api/searches/{search_id}/individuals/")]
            samples, window, usage = measure(url, cookies, urls, args.seconds, args.warmup, web_pid)
            # The web server's profile is written when it stops (SIGTERM): stop it before reading.
            web.stop_all(grace=20)
            profiled = summary(profile) if profile.exists() else None
    report.add(table(["URL", "requests", "per s", "p50", "p95", "max", "failed", "KiB (mean, as sent)"],
                     rows_of(samples, window[1] - window[0])))
    report.add("Where the web process spent its time (`benchmarks/sampler.py`: every 5 ms, each thread's "
               "stack; the share of its samples each function was on):\n\n```\n"
               + (profiled or "(no profile was written)") + "\n```")


if __name__ == "__main__":
    main_guard(main)
