"""The ASGI handler of the web process (``webapp.http_handler``): whole requests through it, one thread per
request in flight, kept for the next ones, and the middleware chain and the view of a request on one thread."""
from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import async_to_sync
from channels.testing import HttpCommunicator
from django.http import HttpResponse
from django.urls import path

from webapp.http_handler import SyncChainHandler

pytestmark = pytest.mark.django_db(transaction=True)
threads: list[tuple[str, str]] = []
#: Requests that wait for each other: all of them in flight at once.
gate = threading.Barrier(3, timeout=60)


class RecordThread:
    """A middleware that notes the thread it runs on, so a test can compare it with the view's."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        threads.append(("middleware", threading.current_thread().name))
        return self.get_response(request)


def where(request):
    threads.append(("view", threading.current_thread().name))
    return HttpResponse(threading.current_thread().name)


def together(request):
    gate.wait()
    return HttpResponse(threading.current_thread().name)


urlpatterns = [path("where/", where), path("together/", together)]


@pytest.fixture
def handler(settings):
    settings.ROOT_URLCONF = __name__
    settings.MIDDLEWARE = [f"{__name__}.RecordThread", *settings.MIDDLEWARE]
    threads.clear()
    return SyncChainHandler()


async def get(handler, url: str) -> tuple[int, str]:
    communicator = HttpCommunicator(handler, "GET", url, headers=[(b"host", b"localhost")])
    response = await communicator.get_response(timeout=60)
    return response["status"], response["body"].decode()


def test_the_chain_and_the_view_run_on_one_thread_kept_for_the_next_requests(handler):
    async def three_in_turn():
        return [await get(handler, "/where/") for _ in range(3)]

    answers = async_to_sync(three_in_turn)()
    assert [status for status, _ in answers] == [200, 200, 200]
    assert len({name for _, name in answers}) == 1  # the same pooled thread each time
    assert threads == [("middleware", answers[0][1]), ("view", answers[0][1])] * 3
    assert answers[0][1] != threading.current_thread().name


def test_requests_in_flight_at_once_each_have_a_thread(handler):
    async def at_once():
        return await asyncio.gather(*(get(handler, "/together/") for _ in range(3)))

    answers = async_to_sync(at_once)()  # the barrier opens only if the three views run at the same time
    assert [status for status, _ in answers] == [200, 200, 200]
    assert len({name for _, name in answers}) == 3


def test_a_page_of_the_project_through_the_asgi_application():
    from webapp.asgi import application

    async def login_page():
        communicator = HttpCommunicator(application, "GET", "/accounts/login/", headers=[(b"host", b"localhost")])
        return await communicator.get_response(timeout=60)

    response = async_to_sync(login_page)()
    assert response["status"] == 200 and b'name="password"' in response["body"]


def test_past_the_threads_it_keeps_a_burst_leaves_none_behind():
    from webapp.http_handler import ExecutorPool

    pool = ExecutorPool(keep=2)
    lent = [pool.take() for _ in range(5)]
    threads_of = [executor.submit(threading.current_thread).result(timeout=60) for executor in lent]
    for executor in lent:
        pool.give_back(executor)
    for thread in threads_of[2:]:
        thread.join(timeout=60)  # the three beyond the two kept end
    assert [thread.is_alive() for thread in threads_of] == [True, True, False, False, False]
    assert pool.take() is lent[1] and pool.take() is lent[0] and pool.take() not in lent


def connection_of(request):
    from django.db import connection

    connection.ensure_connection()
    return HttpResponse(str(id(connection.connection)))


urlpatterns.append(path("connection/", connection_of))


def test_a_request_thread_keeps_its_database_connection_and_other_threads_do_not(handler):
    """The pooled request thread's connection serves the next request; a connection opened anywhere else is
    closed after its request, as ``CONN_MAX_AGE = 0`` says (the websockets' database thread, for one)."""
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection
    from django.test import RequestFactory

    async def two_in_turn():
        return [await get(handler, "/connection/") for _ in range(2)]

    first, second = async_to_sync(two_in_turn)()
    assert first[0] == second[0] == 200 and first[1] == second[1]

    connection.close()
    request = RequestFactory().get("/connection/", HTTP_HOST="localhost")
    response = WSGIHandler()(request.environ, lambda status, headers: None)  # on this thread: not a pooled one
    assert b"".join(response)
    response.close()  # the end of the request (request_finished)
    assert connection.connection is None
