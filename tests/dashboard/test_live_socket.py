"""The search websocket: refusals (other origin, anonymous, non-owner), and catch-up after a dropped connection
over the real Channels layer on Redis."""
from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator

from webapp.searches import broadcast, recording
from webapp.searches.models import Individual
from webapp.settings.env import redis_channel_layer

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
ORIGIN = (b"origin", b"http://localhost")
#: Seconds a handshake or a message may take on a loaded machine (a wait ends as soon as it arrives).
WAIT = 60


@pytest.fixture
def redis_layer(settings, redis_url):
    settings.CHANNEL_LAYERS = {"default": redis_channel_layer(redis_url)}


def cookie(client, user) -> tuple[bytes, bytes]:
    client.force_login(user)
    return b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()


def communicator(search_id: int, *headers) -> WebsocketCommunicator:
    from webapp.asgi import application

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


def test_a_dropped_connection_loses_nothing(client, users, search, redis_layer):
    headers = (ORIGIN, cookie(client, users["owner"]))
    individual = Individual.objects.get(search=search, number=9)

    def more(n: int) -> None:
        broadcast.notify_many(search.pk, [("individual.finished", recording.individual_event(individual))] * n)

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
