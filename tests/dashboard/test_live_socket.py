"""The search websocket: refusals (other origin, anonymous, non-owner), and catch-up after a dropped connection
over the real Channels layer on Redis."""
from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator

from webapp.searches import broadcast
from webapp.searches.models import Individual
from webapp.settings.env import redis_channel_layer

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
ORIGIN = (b"origin", b"http://localhost")
HOST = (b"host", b"localhost")
#: Seconds a handshake or a message may take on a loaded machine (a wait ends as soon as it arrives).
WAIT = 60


@pytest.fixture
def redis_layer(settings, redis_url):
    settings.CHANNEL_LAYERS = {"default": redis_channel_layer(redis_url)}


def cookie(client, user) -> tuple[bytes, bytes]:
    client.force_login(user)
    return b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()


def communicator(search_id: int, *headers) -> WebsocketCommunicator:
    """A handshake as a browser sends it: ``Host: localhost`` unless ``headers`` name another."""
    from webapp.asgi import application

    if not any(name == b"host" for name, _ in headers):
        headers = (HOST, *headers)
    return WebsocketCommunicator(application, f"/ws/searches/{search_id}/", headers=list(headers))


def connects(search_id: int, *headers) -> bool:
    async def attempt():
        socket = communicator(search_id, *headers)
        connected, _ = await socket.connect(timeout=WAIT)
        await socket.disconnect()
        return connected

    return async_to_sync(attempt)()


def test_refuses_other_origins_anonymous_users_and_non_owners(client, users, search, redis_layer):
    owner = cookie(client, users["owner"])
    assert connects(search.pk, ORIGIN, owner)
    assert not connects(search.pk, (b"origin", b"http://evil.example"), owner)
    assert not connects(search.pk, owner)  # no origin at all
    assert not connects(search.pk, ORIGIN)  # anonymous
    assert not connects(search.pk, ORIGIN, cookie(client, users["other"]))
    assert connects(search.pk, ORIGIN, cookie(client, users["staff"]))
    assert not connects(search.pk + 1000, ORIGIN, owner)


#: (Origin, Host, accepted?): the page's own scheme, host and port only, for a host in ALLOWED_HOSTS.
ORIGINS = [
    ("http://localhost", "localhost", True),
    ("http://localhost:80", "localhost", True),
    ("http://127.0.0.1:8000", "127.0.0.1:8000", True),
    ("http://127.0.0.1:9999", "127.0.0.1:8000", False),  # another program on the same machine
    ("http://127.0.0.1:9999", "127.0.0.1", False),
    ("https://localhost", "localhost", False),  # the page is served over http
    ("http://localhost:8000", "127.0.0.1:8000", False),
    ("http://evil.example", "evil.example", False),  # not an allowed host (DNS rebinding)
    ("null", "localhost", False),
    ("http://localhost/path", "localhost", False),
]


@pytest.mark.parametrize("origin,host,accepted", ORIGINS)
def test_only_the_sites_own_origin_may_open_a_socket(client, users, search, redis_layer, origin, host, accepted):
    owner = cookie(client, users["owner"])
    assert connects(search.pk, (b"origin", origin.encode()), (b"host", host.encode()), owner) is accepted


def test_behind_a_tls_proxy_the_https_origin_and_the_trusted_origins_are_accepted(client, users, search,
                                                                                 redis_layer, settings):
    settings.ALLOWED_HOSTS = ["nas.example.org"]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.CSRF_TRUSTED_ORIGINS = ["https://dashboard.example.org", "https://*.lab.example.org"]
    owner = cookie(client, users["owner"])
    host, proxied = (b"host", b"nas.example.org"), (b"x-forwarded-proto", b"https")
    assert connects(search.pk, (b"origin", b"https://nas.example.org"), host, proxied, owner)
    assert not connects(search.pk, (b"origin", b"http://nas.example.org"), host, proxied, owner)
    assert not connects(search.pk, (b"origin", b"https://nas.example.org"), host, owner)  # not told it is https
    assert connects(search.pk, (b"origin", b"https://dashboard.example.org"), host, owner)
    assert connects(search.pk, (b"origin", b"https://a.lab.example.org"), host, owner)
    assert not connects(search.pk, (b"origin", b"https://dashboard.example.org:8443"), host, owner)


def test_an_unreachable_redis_closes_the_handshake_with_try_again_later(client, users, search, settings):
    """No 500 when Redis is away: the socket is accepted and closed with 4013, and the page retries."""
    import socket as sockets

    with sockets.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.CHANNEL_LAYERS = {"default": redis_channel_layer(f"redis://127.0.0.1:{port}/0")}
    headers = (ORIGIN, cookie(client, users["owner"]))

    async def attempt():
        socket = communicator(search.pk, *headers)
        connected, _ = await socket.connect(timeout=30)
        closing = await socket.receive_output(timeout=30)
        await socket.wait(timeout=30)
        return connected, closing

    connected, closing = async_to_sync(attempt)()
    assert connected and closing == {"type": "websocket.close", "code": 4013}


def test_a_dropped_connection_loses_nothing(client, users, search, redis_layer):
    headers = (ORIGIN, cookie(client, users["owner"]))
    individual = Individual.objects.get(search=search, number=9)

    def more(n: int) -> None:
        broadcast.notify_many(search.pk, [("individual.finished", broadcast.individual_event(individual))] * n)

    async def scenario():
        seen: list[int] = []
        socket = communicator(search.pk, *headers)
        assert (await socket.connect(timeout=WAIT))[0]
        await socket.send_json_to({"type": "resume", "after": 4})
        seen += [e["seq"] for e in (await socket.receive_json_from(timeout=WAIT))["events"]]
        assert seen == [5, 6, 7, 8, 9, 10]
        # Live: published by the engine's broadcast after commit, relayed through the Redis layer.
        from asgiref.sync import sync_to_async

        await sync_to_async(more)(2)
        seen += [e["seq"] for e in (await socket.receive_json_from(timeout=WAIT))["events"]]
        assert seen[-2:] == [11, 12]
        await socket.disconnect()
        await sync_to_async(more)(3)  # while nobody listens
        socket = communicator(search.pk, *headers)
        assert (await socket.connect(timeout=WAIT))[0]
        await socket.send_json_to({"type": "resume", "after": seen[-1]})
        seen += [e["seq"] for e in (await socket.receive_json_from(timeout=WAIT))["events"]]
        await socket.send_json_to({"type": "what"})
        assert (await socket.receive_json_from(timeout=WAIT))["type"] == "error"
        await socket.disconnect()
        return seen

    assert async_to_sync(scenario)() == list(range(5, 16))
