"""The web process: the ASGI application (``webapp.asgi``) under uvicorn, several processes on one port.

One process runs its Python on one core at a time (the GIL): every page, API call and websocket of every viewer
it serves shares that core. ``uvicorn --workers N`` binds the port once and starts N worker processes that all
accept on it; its supervisor starts a worker again at once when one dies, and SIGTERM or SIGINT stops them all
(each finishes the requests it serves, for up to :data:`GRACE` seconds). A worker that fails before it serves
(a broken setting) stops the whole server instead of being started again in a loop; under ``manage.py up`` the
launcher then starts it again with its back-off (``webapp.stack.backoff``). Websockets work from any worker:
their groups live in Redis (the Channels layer), and so do sessions, the login throttle and the snapshots.

Measured against the hand-written connection dispatcher this replaced, same load, same number of processes
(``benchmarks/results/web-servers.md``): a lower p95 for pages, the API and websocket events. Of ours between
the socket and the application there is only :class:`HttpProtocol`, the limit on a URL's length.
"""
from __future__ import annotations

import json
import os
import socket

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from evaluators.lifetime import die_with_parent
from webapp.settings.env import env_int

#: Set by the supervising process for its workers: the pid they must not outlive.
PARENT = "NAS_WEB_PARENT"
#: The longest path and query string read (bytes): far more than any link of the site, far less than what only
#: costs a server memory. uvicorn alone reads up to 64 KB and answers 400 beyond.
MAX_URL_BYTES = 8192
#: Where errors are JSON (``webapp.dashboard.api_errors``; not imported here: it would set Django up).
API_PREFIX = b"/api/"


class URLTooLong(Exception):
    pass


class HttpProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol (httptools), answering 414 to a URL past :data:`MAX_URL_BYTES` as soon as that
    much has come, with a short body: JSON under ``/api/`` like every API error, plain text elsewhere.

    It overrides two of uvicorn's internal methods, which is why uvicorn is pinned exactly."""

    too_long = False

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > MAX_URL_BYTES:
            self.too_long = True
            raise URLTooLong  # parsing stops; uvicorn answers through send_400_response, below

    def send_400_response(self, msg: str) -> None:
        if not self.too_long:
            super().send_400_response(msg)
            return
        message = f"URI too long: more than {MAX_URL_BYTES} bytes of path and query string."
        if self.url.startswith(API_PREFIX):
            body, kind = json.dumps({"error": message}).encode(), b"application/json"
        else:
            body, kind = message.encode() + b"\n", b"text/plain; charset=utf-8"
        self.transport.write(b"HTTP/1.1 414 URI Too Long\r\ncontent-type: " + kind + b"\r\ncontent-length: "
                             + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)
        self.transport.close()


#: uvicorn's implementations, named rather than left to what happens to be installed ("auto").
PROTOCOLS = {"http": HttpProtocol, "ws": "websockets-sansio", "loop": "uvloop"}
#: Seconds a stopping worker lets the requests it serves finish.
GRACE = 10


def default_workers() -> int:
    """``NAS_WEB_WORKERS``, else one per core up to four (each process holds ~150 MB)."""
    return env_int("NAS_WEB_WORKERS", max(1, min(os.cpu_count() or 1, 4)))


def application():
    """The application of one worker process (uvicorn's ``factory``): it dies with the supervising process, so a
    SIGKILL of ``manage.py web`` leaves no worker serving the port."""
    parent = os.environ.get(PARENT)
    if parent and int(parent) != os.getpid():
        die_with_parent(parent=int(parent))
    from webapp.asgi import application

    return application


def check_port(host: str, port: int) -> None:
    """Raise ``OSError`` if ``host:port`` cannot be listened on (taken, or not an address of this machine)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds it
        probe.bind((host, port))
        probe.listen(1)


def serve(host: str, port: int, workers: int, proxy_headers: bool = False, access_log: bool = True) -> None:
    """Serve until SIGTERM or SIGINT: ``workers`` uvicorn processes on ``host:port``."""
    import uvicorn

    check_port(host, port)
    if workers > 1:
        os.environ[PARENT] = str(os.getpid())  # the workers are spawned with this environment
    uvicorn.run(
        "webapp.stack.web_server:application", factory=True, host=host, port=port, workers=workers,
        lifespan="off",  # Django and Channels have no startup or shutdown to run
        proxy_headers=proxy_headers,
        # Behind a reverse proxy the proxy's own address is not known here: trust the headers from any address
        # (as daphne's --proxy-headers did), unless FORWARDED_ALLOW_IPS names the proxies.
        forwarded_allow_ips=os.environ.get("FORWARDED_ALLOW_IPS") or ("*" if proxy_headers else None),
        # SIGTERM: requests in flight get this long to finish, open websockets are closed (1012, "restart").
        timeout_graceful_shutdown=GRACE,
        access_log=access_log, server_header=False, **PROTOCOLS,
    )
