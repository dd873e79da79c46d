"""The live snapshot's cache, against the session's real Redis: what it serves equals a fresh build, a new event
refreshes it (at once, or after ``NAS_SNAPSHOT_MAX_AGE``), nobody gets a snapshot of a search they may not see
or of another search that reused an id, and the page is served without Redis too."""
from __future__ import annotations

import gzip
import json
import time

import pytest
import redis
from django.urls import reverse

from tests.dashboard.conftest import CONFIG, fill
from tests.engine.conftest import wait_until
from webapp.dashboard import live, snapshots
from webapp.searches import broadcast
from webapp.searches.models import Individual, Search
from webapp.services import lifecycle


@pytest.fixture(autouse=True)
def fresh_cache(redis_url):
    """No snapshot of an earlier test (search ids repeat across tests) and a client for this test's Redis."""
    snapshots._clients.clear()
    store = redis.Redis.from_url(redis_url)
    keys = store.keys("nas:snapshot:*")
    if keys:
        store.delete(*keys)
    yield store
    snapshots._clients.clear()


def get(client, search_id: int, gzipped: bool = False) -> dict:
    extra = {"HTTP_ACCEPT_ENCODING": "gzip"} if gzipped else {}
    response = client.get(reverse("api-snapshot", args=[search_id]), **extra)
    assert response.status_code == 200, response.content[:300]
    body = gzip.decompress(response.content) if gzipped else response.content
    return json.loads(body)


BUILD = live.snapshot


def fresh(search: Search) -> dict:
    """A snapshot built now, without the cache, as the client receives it."""
    return json.loads(snapshots.encode(BUILD(search))[0])


def without_clock(snapshot: dict) -> dict:
    """What does not depend on when it was built (``now``: the build's clock)."""
    return {key: value for key, value in snapshot.items() if key != "now"}


def counting_builds(monkeypatch) -> list[int]:
    builds: list[int] = []

    def counted(search):
        builds.append(search.pk)
        return BUILD(search)

    monkeypatch.setattr(live, "snapshot", counted)
    return builds


def test_a_snapshot_from_the_cache_equals_a_fresh_one(owner_client, search, fresh_cache, monkeypatch):
    builds = counting_builds(monkeypatch)
    first = get(owner_client, search.pk, gzipped=True)
    plain = get(owner_client, search.pk)
    again = get(owner_client, search.pk, gzipped=True)
    assert builds == [search.pk]  # built once, then served from Redis, in both encodings
    assert fresh_cache.exists(snapshots.key(search))
    assert first == plain == again
    assert without_clock(again) == without_clock(fresh(search))
    assert again["seq"] == search.event_seq == 10 and sorted(again["plotted"]) == list(range(10))


def test_a_snapshot_of_another_state_is_never_served_however_young(owner_client, search, settings, fresh_cache,
                                                                    monkeypatch):
    """A page reloaded after Stop shows what its snapshot says (its buttons follow it): a snapshot younger than
    the max age, built while the search ran, must not come back once it has stopped, not even while another
    request builds the next one."""
    builds = counting_builds(monkeypatch)
    settings.NAS_SNAPSHOT_MAX_AGE = 3600
    Search.objects.filter(pk=search.pk).update(status="running")
    assert get(owner_client, search.pk)["search"]["status"] == "running" and len(builds) == 1
    Search.objects.filter(pk=search.pk).update(status="stopped")
    broadcast.notify(search.pk, "search.status", {"status": "stopped"})
    assert get(owner_client, search.pk)["search"]["status"] == "stopped" and len(builds) == 2
    Search.objects.filter(pk=search.pk).update(status="running")
    broadcast.notify(search.pk, "search.status", {"status": "running"})
    fresh_cache.set(f"{snapshots.key(search)}:build", "another request", px=60_000)
    # The build never comes (that request died): after the wait, this request builds its own.
    monkeypatch.setattr(snapshots, "WAIT_SECONDS", 0.2)
    assert get(owner_client, search.pk)["search"]["status"] == "running" and len(builds) == 3


def test_the_response_carries_the_servers_clock(owner_client, search):
    owner_client.get(reverse("api-snapshot", args=[search.pk]))
    before = time.time()
    response = owner_client.get(reverse("api-snapshot", args=[search.pk]))
    assert before - 1 <= float(response["X-Server-Time"]) <= time.time() + 1
    assert "Accept-Encoding" in response["Vary"]


def test_a_new_event_refreshes_it_once_the_snapshot_is_older_than_the_max_age(owner_client, search, settings,
                                                                             monkeypatch):
    builds = counting_builds(monkeypatch)
    settings.NAS_SNAPSHOT_MAX_AGE = 3600
    assert get(owner_client, search.pk)["seq"] == 10
    running = Individual.objects.get(search=search, number=9)
    broadcast.notify(search.pk, "individual.finished", broadcast.individual_event(running))
    # Younger than the max age: the page catches up from its sequence number, so the old one is served.
    assert get(owner_client, search.pk)["seq"] == 10 and len(builds) == 1
    settings.NAS_SNAPSHOT_MAX_AGE = 0
    refreshed = get(owner_client, search.pk)
    assert refreshed["seq"] == 11 and len(builds) == 2
    assert without_clock(refreshed) == without_clock(fresh(search))
    assert get(owner_client, search.pk)["seq"] == 11 and len(builds) == 2  # nothing new: no new build


def test_another_user_never_gets_it(client, owner_client, users, search):
    mine = get(owner_client, search.pk)
    client.force_login(users["other"])
    refused = client.get(reverse("api-snapshot", args=[search.pk]), HTTP_ACCEPT_ENCODING="gzip")
    assert refused.status_code == 404 and refused.json() == {"error": "Not found."}
    client.force_login(users["staff"])  # staff see every search: the same snapshot
    assert without_clock(get(client, search.pk)) == without_clock(mine)


def test_a_search_that_reuses_an_id_never_gets_the_old_ones_snapshot(client, owner_client, users, search):
    """A database started again (a new state folder) with the Redis of the old one: the same id, the same
    sequence number, another owner's search."""
    old = get(owner_client, search.pk)
    search_id = search.pk
    Search.objects.filter(pk=search_id).delete()
    theirs = lifecycle.create_search(users["other"], "theirs", CONFIG)
    Search.objects.filter(pk=theirs.pk).update(id=search_id)
    theirs = fill(Search.objects.get(pk=search_id), 10)
    assert theirs.event_seq == old["seq"]
    client.force_login(users["other"])
    snapshot = get(client, search_id)
    assert snapshot["search"]["name"] == "theirs" and snapshot["search"]["owner"] == "other"
    assert without_clock(snapshot) == without_clock(fresh(theirs))


def test_while_another_request_builds_the_one_there_is_is_served(owner_client, search, settings, fresh_cache,
                                                                 monkeypatch):
    old = get(owner_client, search.pk)
    broadcast.notify(search.pk, "search.progress", {})
    settings.NAS_SNAPSHOT_MAX_AGE = 0
    fresh_cache.set(f"{snapshots.key(search)}:build", "another request", px=60_000)
    builds = counting_builds(monkeypatch)
    assert get(owner_client, search.pk) == old and builds == []


def test_without_a_snapshot_a_request_waits_for_the_first_build_then_builds_its_own(owner_client, search,
                                                                                  fresh_cache, monkeypatch):
    """The request that held the build lock died: the lock expires, and meanwhile a request builds its own."""
    monkeypatch.setattr(snapshots, "WAIT_SECONDS", 0.3)
    fresh_cache.set(f"{snapshots.key(search)}:build", "a dead request", px=60_000)
    assert without_clock(get(owner_client, search.pk)) == without_clock(fresh(search))


def test_without_redis_each_request_builds_its_own(owner_client, search, settings, caplog):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"  # nothing listens there
    snapshots._clients.clear()
    assert without_clock(get(owner_client, search.pk, gzipped=True)) == without_clock(fresh(search))
    assert "snapshot cache unavailable" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_new_one_is_built_in_the_background(users, client, settings, fresh_cache):
    """A web request (no transaction around it) serves the old snapshot at once and a thread builds the new one;
    the next request gets that."""
    search = fill(lifecycle.create_search(users["owner"], "mine", CONFIG), 6)
    client.force_login(users["owner"])
    assert get(client, search.pk)["seq"] == 6
    broadcast.notify(search.pk, "search.progress", {})
    settings.NAS_SNAPSHOT_MAX_AGE = 0
    assert get(client, search.pk)["seq"] == 6  # the old one, while the thread builds
    wait_until(lambda: int(fresh_cache.hget(snapshots.key(search), "seq") or 0) == 7, timeout=60)
    wait_until(lambda: not fresh_cache.exists(f"{snapshots.key(search)}:build"), timeout=60)
    assert get(client, search.pk)["seq"] == 7
