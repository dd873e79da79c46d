"""The real stack for the dashboard's browser tests: the engine's fixtures (Redis, control and evaluation
workers as subprocesses) plus the web server (``manage.py web``) on the test database, so websockets work."""
from __future__ import annotations

import socket
import sys

import pytest

from tests.conftest import ROOT, ProcessLog
from tests.engine.conftest import engine, stack, wait_until  # noqa: F401 (fixtures re-exported)

__all__ = ["engine", "stack", "wait_until", "web", "sign_in"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def web(stack, settings, request):
    """``manage.py web``, one process (HTTP, websockets, static files), on the test database and Redis."""
    port = free_port()
    env = stack.env()
    server = ProcessLog([sys.executable, str(ROOT / "manage.py"), "web", "--workers", "1", "--port", str(port)], env)
    stack.processes.append(server)
    server.wait_for(f"Uvicorn running on http://127.0.0.1:{port}", timeout=60)
    yield f"http://127.0.0.1:{port}"
    # Every process's whole output, for a post-mortem (pytest shows only the tail of each).
    logs = settings.STATE_DIR / "browser-logs"
    logs.mkdir(parents=True, exist_ok=True)
    for number, process in enumerate(stack.processes):
        name = "-".join(process.process.args[2:4]).replace("/", "_")
        (logs / f"{request.node.name}-{number}-{name}.log").write_text(process.text)




def sign_in(page, base_url: str, user) -> None:
    """Put a session cookie for ``user`` in the browser (the login form itself is tested elsewhere)."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": base_url}])
