"""The live page's snapshot, built once per search and event and shared by every viewer and web process.

A snapshot is the same for every viewer of a search until the search's next event, and building it reads every
individual and draws every figure (about 0.1 s of CPU at 3,000 individuals, with its JSON and gzip): twenty
viewers rebuilt it seven times a second and held every other request up behind it. So the encoded snapshot,
its JSON and its gzip, is kept in Redis (one copy for every web process) with the sequence number of the last
event it includes, and a request serves it:

- when its number is the search's (nothing happened since), or
- when it was built less than ``NAS_SNAPSHOT_MAX_AGE`` seconds ago (2 by default), though events came since,
  and the search's state is still the one it shows (a page reloaded after Stop must not be told "running": its
  buttons follow the snapshot). A page applies the events after its snapshot's number as soon as its websocket opens, so an older snapshot
  shows the same once those arrive; a search that records results many times a second is then drawn at most
  once per that time, instead of once per viewer and event.

Otherwise the first request to see that starts a new build (a lock in Redis: one build per search at a
time, across processes), in a thread of its own, and serves the one there is meanwhile, as every other
request does; only when there is none yet do requests wait for the first build. If Redis does not answer,
each request builds its own, as before, and a warning is logged.

Who may see a search is decided before any of this (``access.owned_search``): a snapshot holds nothing of its
viewer, so one copy serves every user allowed to see the search. Its key holds the search's id and creation
time, so a database that starts again with the same ids (a new state folder with an old Redis) never serves
a snapshot of another search.
"""
from __future__ import annotations

import dataclasses
import gzip
import json
import logging
import threading
import time
import uuid

import redis
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, connections

from webapp.dashboard import live
from webapp.searches.models import Search

log = logging.getLogger(__name__)

#: A snapshot nobody asked for in this long leaves Redis.
KEEP_SECONDS = 3600
#: How long the right to build a search's snapshot lasts (a build takes well under a second; a web process that
#: died while building frees it after this).
BUILD_LOCK_SECONDS = 30
#: How long a request waits for another one's first build of a snapshot before it builds its own.
WAIT_SECONDS = 10.0
POLL_SECONDS = 0.05

# Stores a snapshot unless a newer one (a higher sequence number) is there already: two builds that overlap
# (one outlived its lock) never put an older snapshot back.
STORE = """
local current = redis.call('HGET', KEYS[1], 'seq')
if current and tonumber(current) > tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'seq', ARGV[1], 'built', ARGV[2], 'json', ARGV[3], 'gzip', ARGV[4], 'status', ARGV[6])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""
# Frees the build lock only if this request still holds it.
RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

_clients: dict[str, redis.Redis] = {}
#: The fields of a search :func:`get` reads (its key, its last event, its state); a build reads the rest itself.
FIELDS = ("created", "event_seq", "status")


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """An encoded snapshot: the sequence number of its last event, when it was built, its body (JSON, or the
    gzip of that JSON) and the search's state it shows."""

    seq: int
    built: float
    body: bytes
    gzipped: bool
    status: str


def key(search: Search) -> str:
    return f"nas:snapshot:{search.pk}:{search.created.timestamp():.6f}"


def encode(snapshot: dict) -> tuple[bytes, bytes]:
    """The snapshot as JSON (as ``JsonResponse`` writes it) and the gzip of that JSON."""
    body = json.dumps(snapshot, cls=DjangoJSONEncoder).encode()
    # Level 5: within 2 % of level 6's size at two thirds of its time (1.3 MB of a 3,000-individual search).
    return body, gzip.compress(body, compresslevel=5, mtime=0)


def _client() -> redis.Redis:
    """Short timeouts: a cache that does not answer must not hold a page up (the request builds its own)."""
    url = settings.REDIS_URL
    if url not in _clients:
        tls = url.startswith("rediss://") and settings.NAS_REDIS_CA
        options = {"ssl_ca_certs": settings.NAS_REDIS_CA} if tls else {}
        _clients[url] = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5, **options)
    return _clients[url]


def _read(client: redis.Redis, name: str, gzipped: bool) -> Snapshot | None:
    seq, built, body, status = client.hmget(name, ["seq", "built", "gzip" if gzipped else "json", "status"])
    if seq is None or built is None or body is None or status is None:
        return None
    return Snapshot(int(seq), float(built), body, gzipped, status.decode())


def shows_its_state(snapshot: Snapshot, search: Search) -> bool:
    """Whether ``snapshot`` shows the search's state now (else it is never served, however young)."""
    return snapshot.seq >= search.event_seq or snapshot.status == search.status


def fresh(snapshot: Snapshot, search: Search, now: float) -> bool:
    """Whether ``snapshot`` may be served for ``search`` (its last event and state just read)."""
    if snapshot.seq >= search.event_seq:
        return True
    return shows_its_state(snapshot, search) and now - snapshot.built < settings.NAS_SNAPSHOT_MAX_AGE


def build(search: Search, gzipped: bool, client: redis.Redis | None = None, name: str = "") -> Snapshot:
    """Build the snapshot now (and store it, given a client)."""
    built = time.time()
    snapshot = live.snapshot(search)
    body, packed = encode(snapshot)
    if client is not None:
        try:
            client.eval(STORE, 1, name, snapshot["seq"], repr(built), body, packed, KEEP_SECONDS,
                        snapshot["search"]["status"])
        except redis.RedisError as error:
            log.warning("could not keep the snapshot of search %s (%s)", search.pk, error)
    return Snapshot(snapshot["seq"], built, packed if gzipped else body, gzipped, snapshot["search"]["status"])


def _build_later(search_id: int, client: redis.Redis, name: str, lock: str, token: str) -> None:
    """Build and store the snapshot in a thread of its own, then free the lock: the request that found the old
    one serves it at once instead of waiting for a build that shares its process's one core with every other
    request (seconds at the tail under load)."""

    def run() -> None:
        try:
            build(Search.objects.only("pk").get(pk=search_id), False, client, name)
        except Exception:  # a thread's exception would only reach stderr: say which search it was
            log.exception("could not build the snapshot of search %s", search_id)
        finally:
            try:
                client.eval(RELEASE, 1, lock, token)
            except redis.RedisError:
                pass  # it expires by itself
            connections.close_all()  # this thread's own connections

    threading.Thread(target=run, name=f"snapshot-{search_id}", daemon=True).start()


def get(search: Search, gzipped: bool) -> Snapshot:
    """The snapshot to serve for ``search`` (whose ``event_seq`` was just read), as gzip or as plain JSON."""
    name = key(search)
    try:
        client = _client()
        cached = _read(client, name, gzipped)
        if cached is not None and fresh(cached, search, time.time()):
            return cached
        if cached is not None and not shows_its_state(cached, search):
            cached = None  # never served meanwhile: this request waits for (or makes) one that does
        lock, token = f"{name}:build", uuid.uuid4().hex
        if client.set(lock, token, nx=True, px=BUILD_LOCK_SECONDS * 1000):
            # A build on another connection sees only what is committed: inside a transaction (a test's), here.
            if cached is not None and not connection.in_atomic_block:
                _build_later(search.pk, client, name, lock, token)
                return cached
            try:
                return build(search, gzipped, client, name)
            finally:
                client.eval(RELEASE, 1, lock, token)
        if cached is not None:  # another request is building a newer one: this one meanwhile
            return cached
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
            cached = _read(client, name, gzipped)
            if cached is not None and shows_its_state(cached, search):
                return cached
        return build(search, gzipped)  # that build never came (its process died): this request's own
    except redis.RedisError as error:
        log.warning("snapshot cache unavailable (%s): building the snapshot of search %s for this request",
                    error, search.pk)
        return build(search, gzipped)
