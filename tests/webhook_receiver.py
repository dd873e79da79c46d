"""A webhook receiver on the loopback for the tests: a tiny ``http.server`` in a thread that records every call
(path, headers in lower case, raw body) and answers each with the next status of a script (then 200)."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    def __init__(self, statuses: list[int] | None = None) -> None:
        self.calls: list[dict] = []
        self.statuses = list(statuses or [])
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with owner._lock:
                    status = owner.statuses.pop(0) if owner.statuses else 200
                    headers = {name.lower(): value for name, value in self.headers.items()}
                    owner.calls.append({"path": self.path, "headers": headers, "body": data, "answered": status})
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", "/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.server.server_port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
