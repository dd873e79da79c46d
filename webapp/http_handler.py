"""Django's ASGI handler for HTTP, with the cost of a request cut down to what the request itself needs.

Every view and middleware of this project is synchronous. Django's own ``ASGIHandler`` keeps the middleware
chain in async mode, so each of its middleware's ``process_request`` and ``process_response`` hops from the event
loop to a thread and back (a dozen hops a request), and it runs every request in a new thread (a new
``ThreadPoolExecutor``, joined afterwards by yet another thread), which opens a new database connection.
Profiled under 20 clients, those hops, thread starts and connections cost more CPU than the views themselves.

:class:`SyncChainHandler` runs the whole middleware chain and the view in one call on one thread, as a WSGI
server does (what Django's documentation recommends for a synchronous project under ASGI), and takes that
thread from a pool of threads kept between requests, so a thread's database connection lives on
(:data:`KEEP_CONNECTION_SECONDS`; opening one costs a millisecond of CPU, its pragmas). Only those threads keep
theirs. With ``CONN_MAX_AGE`` set for the whole process, the websockets' database thread kept its connection
too, and the websocket test of a Redis restart (``tests/dashboard/test_live_burst.py``) hung at its reconnect,
3 runs of 3; it passes with them closed after each use, as Django does by default. Reading the body, streaming
the response and noticing a client that went away stay Django's own code.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.db import connections
from django.db.backends.signals import connection_created

#: How long a request thread's database connection is kept between requests.
KEEP_CONNECTION_SECONDS = 60
_thread = threading.local()


def _mark_request_thread() -> None:
    _thread.pooled = True


def _keep_connection(sender, connection, **kwargs) -> None:
    """A connection opened on a pooled request thread is kept (Django closes the others after each request)."""
    if getattr(_thread, "pooled", False) and connection.close_at is not None:
        connection.close_at = time.monotonic() + KEEP_CONNECTION_SECONDS


connection_created.connect(_keep_connection, dispatch_uid="webapp.http_handler.keep_connection")


class ExecutorPool:
    """Single-thread executors lent to one request at a time and kept afterwards, up to ``keep`` of them idle:
    a burst of requests leaves no more threads (and database connections) behind than that."""

    def __init__(self, keep: int = 32) -> None:
        self.keep = keep
        self._idle: list[ThreadPoolExecutor] = []
        self._lock = threading.Lock()
        self._made = 0

    def take(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._idle:
                return self._idle.pop()
            self._made += 1
            return ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"request-{self._made}",
                                      initializer=_mark_request_thread)

    def give_back(self, executor: ThreadPoolExecutor) -> None:
        with self._lock:
            if len(self._idle) < self.keep:
                self._idle.append(executor)
                return
        executor.submit(connections.close_all)  # its thread's own connections, then the thread ends
        executor.shutdown(wait=False)


class SyncChainHandler(ASGIHandler):
    """``ASGIHandler`` whose middleware chain and view run in one synchronous call, on a pooled thread."""

    def __init__(self) -> None:
        self._executors = ExecutorPool()
        super().__init__()

    def load_middleware(self, is_async: bool = False) -> None:
        # The synchronous chain, as under WSGI: no hop between two middleware.
        super().load_middleware(is_async=False)

    async def get_response_async(self, request):
        return await sync_to_async(self.get_response, thread_sensitive=True)(request)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = self._executors.take()
        try:
            # Every thread-sensitive call of this request (the chain, the signals, closing the response) runs
            # on this one thread, as Django's own handler guarantees with a thread of its own.
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            self._executors.give_back(executor)
