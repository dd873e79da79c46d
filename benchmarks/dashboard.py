"""The dashboard under load: a search of 10,000 individuals and 1,000 live viewers of one search.

Measures, against the real ASGI server (daphne, a subprocess) over a real Redis and Channels layer:

- the search page, the API's first page of individuals and the snapshot a live page starts from (time, size);
- ``--clients`` websocket clients on one search (autobahn's asyncio client, one process): the delivery latency
  from ``broadcast.notify`` (what the loop calls after recording a result) to each client's message, p50 / p95 /
  max, how many messages arrived, and the web process's memory before and after they connected.

The individuals are written in bulk (``benchmarks.bulk``); no worker runs. Run from the repository root::

    .venv/bin/python benchmarks/dashboard.py                      # 10,000 individuals, 1,000 clients
    .venv/bin/python benchmarks/dashboard.py --clients 200 --individuals 2000
"""
from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import resource
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report import Report, command_line, table  # noqa: E402
from benchmarks.stack import Stack, main_guard  # noqa: E402
from webapp.stack.launcher import choose_port  # noqa: E402
from webapp.stack.processes import Supervisor  # noqa: E402

PASSWORD = "bench-password-1"


def start_web(stack: Stack, server: str = "daphne", workers: int | None = None, profile: Path | None = None,
              supervisor: Supervisor | None = None, access_log: bool = True) -> tuple[str, int]:
    """The web server on a free port; its base URL and pid once it answers. ``server``: one plain ``daphne``
    process, ``web`` (``manage.py web``, ``workers`` processes on one port) or ``uvicorn`` (``uvicorn --workers``,
    its default when None: one process); ``profile``: one daphne process under ``benchmarks/sampler.py``, which
    writes its profile there when it stops."""
    port = choose_port("127.0.0.1", 8900)
    daphne = ["-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "webapp.asgi:application"]
    if profile is not None:
        argv = [sys.executable, str(Path(__file__).with_name("sampler.py")), str(profile), *daphne]
    elif server == "web":
        argv = [sys.executable, str(Path(__file__).resolve().parent.parent / "manage.py"), "web",
                "--host", "127.0.0.1", "--port", str(port), *(["--workers", str(workers)] if workers else []),
                *([] if access_log else ["--no-access-log"])]
    elif server == "uvicorn":
        argv = [sys.executable, "-m", "uvicorn", "webapp.asgi:application", "--host", "127.0.0.1", "--port", str(port),
                "--workers", str(workers or 1), "--http", "httptools", "--ws", "websockets-sansio", "--loop", "uvloop",
                "--lifespan", "off", *([] if access_log else ["--no-access-log"])]
    else:
        argv = [sys.executable, *daphne, *([] if access_log else ["-v", "0"])]
    child = (supervisor or stack.base).start("web", argv, env=stack.env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/accounts/login/", timeout=2)
            return url, child.process.pid
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("the web server never answered")


def session_cookie(user) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def timed_get(url: str, cookie: str, repeat: int) -> tuple[float, float, int, int]:
    """Median and max seconds of ``repeat`` GETs that accept gzip as a browser does, and the body's size on
    the wire and once inflated."""
    times, wire, size = [], 0, 0
    for _ in range(repeat):
        request = urllib.request.Request(url, headers={"Cookie": cookie, "Accept-Encoding": "gzip"})
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=120) as response:
            body = response.read()
            wire = len(body)
            if response.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            size = len(body)
        times.append(time.perf_counter() - started)
    return statistics.median(times), max(times), wire, size


def rss_mib(pid: int) -> float:
    import psutil

    process = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [process, *process.children(recursive=True)]) / 2**20


async def watch(url: str, cookie: str, origin: str, clients: int, after: int, expected: int,
                timeout: float) -> dict:
    """Connect ``clients`` websockets, say ``ready`` on stdout, collect each ``bench.tick``'s latency.
    Runs in its own process: autobahn's asyncio flavour cannot share one with daphne's Twisted flavour."""
    from autobahn.asyncio.websocket import WebSocketClientFactory, WebSocketClientProtocol

    connected, latencies = 0, []
    received = asyncio.Event()
    total = clients * expected

    class Viewer(WebSocketClientProtocol):
        def onOpen(self) -> None:
            nonlocal connected
            connected += 1
            self.sendMessage(json.dumps({"type": "resume", "after": after}).encode())

        def onMessage(self, payload: bytes, is_binary: bool) -> None:
            now = time.time()
            seen = self.__dict__.setdefault("seen", set())
            for event in json.loads(payload).get("events", []):
                # An event can come twice (in a catch-up and relayed); a page applies it once, so count it once.
                if event["type"] == "bench.tick" and event["seq"] not in seen:
                    seen.add(event["seq"])
                    latencies.append(now - event["data"]["sent"])
            if len(latencies) >= total:
                received.set()

    loop = asyncio.get_running_loop()
    host, port = url.split("//")[1].split("/")[0].split(":")
    factory = WebSocketClientFactory(url, origin=origin, headers={"Cookie": cookie})
    factory.protocol = Viewer
    for start in range(0, clients, 50):  # in waves: a listen backlog of 1,000 at once would drop some
        await asyncio.gather(*(loop.create_connection(factory, host, int(port))
                               for _ in range(start, min(start + 50, clients))))
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.0)  # the last resumes are answered
    print("ready", connected, flush=True)
    try:
        await asyncio.wait_for(received.wait(), timeout)
    except asyncio.TimeoutError:
        pass
    return {"connected": connected, "latencies": latencies}


def viewers(argv: list[str]) -> None:
    """``dashboard.py --viewers URL COOKIE ORIGIN CLIENTS AFTER EXPECTED TIMEOUT``: the client process."""
    url, cookie, origin, clients, after, expected, timeout = argv
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
    result = asyncio.run(watch(url, cookie, origin, int(clients), int(after), int(expected), float(timeout)))
    print(json.dumps(result), flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--individuals", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=1_000)
    parser.add_argument("--ticks", type=int, default=20, help="events published to the watchers")
    parser.add_argument("--interval", type=float, default=0.25, help="seconds between two published events")
    parser.add_argument("--repeat", type=int, default=5, help="GETs per page timed")
    parser.add_argument("--output", default="dashboard")
    args = parser.parse_args()
    with Stack(control=False) as stack:
        from django.contrib.auth import get_user_model

        from webapp.searches import broadcast
        from benchmarks.bulk import bulk_search

        owner = get_user_model().objects.create_user("viewer", password=PASSWORD)
        started = time.perf_counter()
        search = bulk_search(owner, args.individuals)
        written = time.perf_counter() - started
        url, pid = start_web(stack)
        cookie = session_cookie(owner)
        pages = [
            ("search page", f"{url}/searches/{search.pk}/"),
            ("API: first page of individuals", f"{url}/api/searches/{search.pk}/individuals/"),
            ("API: snapshot of the live page", f"{url}/api/searches/{search.pk}/snapshot/"),
            ("individuals CSV", f"{url}/searches/{search.pk}/download/individuals.csv"),
        ]
        rows = []
        for label, address in pages:
            median, worst, wire, size = timed_get(address, cookie, args.repeat)
            rows.append([label, f"{median * 1000:.0f}", f"{worst * 1000:.0f}", f"{wire / 1024:.0f}",
                         f"{size / 1024:.0f}"])
            print(f"{label}: {median * 1000:.0f} ms, {wire / 1024:.0f} KiB on the wire", flush=True)

        memory_before = rss_mib(pid)
        ws = f"ws://{url.split('//')[1]}/ws/searches/{search.pk}/"
        connecting = time.perf_counter()
        client = subprocess.Popen(
            [sys.executable, __file__, "--viewers", ws, cookie, url, str(args.clients), str(search.event_seq),
             str(args.ticks), str(60 + args.ticks)], stdout=subprocess.PIPE, text=True)
        ready = client.stdout.readline()
        if not ready.startswith("ready"):
            raise RuntimeError(f"the websocket clients never connected: {ready!r}")
        connect_time = time.perf_counter() - connecting
        memory_after = rss_mib(pid)
        for tick in range(args.ticks):
            broadcast.notify(search.pk, "bench.tick", {"tick": tick, "sent": time.time()})
            time.sleep(args.interval)
        result = json.loads(client.stdout.read().strip().splitlines()[-1])
        client.wait()
        latencies = result["latencies"]

    expected = args.clients * args.ticks
    delivered = len(latencies)
    ws_rows = [
        ["clients connected", f"{result.get('connected', 0)} of {args.clients} in {connect_time:.1f} s"],
        ["messages delivered", f"{delivered} of {expected} ({100 * delivered / max(expected, 1):.1f} %)"],
        ["delivery latency p50", f"{percentile(latencies, 0.50) * 1000:.0f} ms"],
        ["delivery latency p95", f"{percentile(latencies, 0.95) * 1000:.0f} ms"],
        ["delivery latency max", f"{max(latencies, default=float('nan')) * 1000:.0f} ms"],
        ["web process memory", f"{memory_before:.0f} MiB before, {memory_after:.0f} MiB with the clients"],
    ]
    report = Report(args.output, "Dashboard under load", command_line(None, "dashboard.py"))
    report.add(f"A search of {args.individuals:,} individuals (written in bulk in {written:.1f} s), served by "
               f"daphne; medians of {args.repeat} GETs.\n")
    report.add(table(["page", "median ms", "max ms", "KiB sent (gzip)", "KiB inflated"], rows))
    report.add(f"\n{args.clients:,} websocket clients on that search; {args.ticks} events published through "
               f"`broadcast.notify` {args.interval:g} s apart; latency from the publish to each client's message.\n")
    report.add(table(["measure", "value"], ws_rows))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--viewers"]:
        viewers(sys.argv[2:])
    else:
        main_guard(main)
