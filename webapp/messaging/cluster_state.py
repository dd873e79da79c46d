"""The hosts as the gang workers publish them in Redis (``nas.allocation.cluster``'s records): what a worker's
allocator reads to decide with the whole cluster, not only its own host.

Per host a hash ``nas:gang:host:<host>``: field ``info`` (its devices and gang sizes), and one field per evaluation
running there, of any search (``run:<token>``: search, gang, start time, expected seconds, spread, how many
evaluations the search's model had observed), and one per candidate a pool process holds while told to wait
(``wait:<token>``: search, since, seen; read as the record's ``waiting``, ``nas.allocation.handing_back``). A
worker writes ``info`` at start and whenever it decides, adds its run when it claims devices and removes it when it
releases them, refreshes its wait at each decision and removes it when the candidate starts or leaves; every host
is listed in the set ``nas:gang:hosts``. A host nobody has touched for ``TTL`` seconds expires (a worker that is
gone); a run left by a killed process is dropped once it is far beyond what it was expected to take. Each
decision, with everything it was made from, is kept in a short list per search (``nas:gang:decisions:<search>``), so
it can be replayed and checked.
"""
from __future__ import annotations

import json
import logging
import time
from typing import Any

from nas.allocation.handing_back import WAIT_STALE
from webapp.messaging import transport

log = logging.getLogger(__name__)

HOSTS = "nas:gang:hosts"
TTL = 600
#: a run still listed this many times past its expected duration is taken for a leftover of a killed process
STALE = 20.0


def host_key(host: str) -> str:
    return f"nas:gang:host:{host}"


def publish_host(host: str, devices: int, sizes: tuple[int, ...]) -> None:
    """This worker's host: its devices and the gang sizes it accepts."""
    try:
        pipe = transport.client().pipeline()
        pipe.hset(host_key(host), "info", json.dumps({"devices": devices, "sizes": list(sizes)}))
        pipe.expire(host_key(host), TTL)
        pipe.sadd(HOSTS, host)
        pipe.execute()
    except Exception as error:
        log.warning("host %s: state not published: %s", host, error)


def _put(host: str, field: str, entry: dict[str, Any], what: str) -> None:
    """Set one field of ``host``'s record (and keep the record alive); a Redis error is logged, never raised."""
    try:
        pipe = transport.client().pipeline()
        pipe.hset(host_key(host), field, json.dumps(entry))
        pipe.expire(host_key(host), TTL)
        pipe.execute()
    except Exception as error:
        log.warning("host %s: %s not published: %s", host, what, error)


def _drop(host: str, field: str, what: str) -> None:
    try:
        transport.client().hdel(host_key(host), field)
    except Exception as error:
        log.warning("host %s: %s not removed: %s", host, what, error)


def publish_run(host: str, token: str, entry: dict[str, Any]) -> None:
    """An evaluation started on ``host`` (``nas.allocation.running_entry``)."""
    _put(host, f"run:{token}", entry, "running evaluation")


def remove_run(host: str, token: str) -> None:
    _drop(host, f"run:{token}", "finished evaluation")


def publish_wait(host: str, token: str, entry: dict[str, Any]) -> None:
    """A pool process of ``host`` holds a candidate it was told to wait with (``{"search", "since", "seen",
    "gang"}``: ``gang``, the gang its decision waits for, is kept for it by the worker's room rule)."""
    _put(host, f"wait:{token}", entry, "waiting candidate")


def remove_wait(host: str, token: str) -> None:
    _drop(host, f"wait:{token}", "waiting candidate")


def _waiting(fields: dict[str, Any], now: float) -> list[dict[str, Any]]:
    """The fresh ``wait:`` entries of a host's record (its fields, names decoded)."""
    entries = [json.loads(value) for key, value in sorted(fields.items()) if key.startswith("wait:")]
    return [entry for entry in entries if now - float(entry["seen"]) < WAIT_STALE]


def waiting_on(host: str, now: float | None = None) -> list[dict[str, Any]]:
    """The candidates the processes of ``host`` hold while told to wait, their fresh entries (raises when Redis
    cannot be read)."""
    fields = transport.client().hgetall(host_key(host))
    decoded = {(k.decode() if isinstance(k, bytes) else k): v for k, v in fields.items()}
    return _waiting(decoded, time.time() if now is None else now)


def read_hosts(now: float | None = None) -> list[dict[str, Any]]:
    """Every published host's record, sorted by name (empty when Redis cannot be read)."""
    now = time.time() if now is None else now
    try:
        client = transport.client()
        names = sorted(name.decode() if isinstance(name, bytes) else name for name in client.smembers(HOSTS))
        pipe = client.pipeline()
        for name in names:
            pipe.hgetall(host_key(name))
        fields = pipe.execute()
    except Exception as error:
        log.warning("cluster state not read: %s", error)
        return []
    records = []
    for name, raw in zip(names, fields):
        data = {(k.decode() if isinstance(k, bytes) else k): v for k, v in raw.items()}
        if "info" not in data:
            continue  # expired: its worker is gone
        info = json.loads(data["info"])
        running = [json.loads(value) for key, value in sorted(data.items()) if key.startswith("run:")]
        running = [r for r in running if now - float(r["started"]) < STALE * max(1.0, float(r["expected"]))]
        records.append({"host": name, "devices": int(info["devices"]), "sizes": info["sizes"], "running": running,
                        "waiting": _waiting(data, now)})
    return records


def decisions_key(search_id: int) -> str:
    return f"nas:gang:decisions:{search_id}"


#: decisions kept per search, the newest
DECISIONS = 500


def record_decision(search_id: int, decision: dict[str, Any]) -> None:
    """One decision and its inputs (model, host records, pending work, time, host, free devices) and its choice."""
    try:
        pipe = transport.client().pipeline()
        pipe.lpush(decisions_key(search_id), json.dumps(decision))
        pipe.ltrim(decisions_key(search_id), 0, DECISIONS - 1)
        pipe.expire(decisions_key(search_id), TTL * 6 * 24)
        pipe.execute()
    except Exception as error:
        log.warning("search %s: decision not recorded: %s", search_id, error)


def read_decisions(search_id: int) -> list[dict[str, Any]]:
    """The recorded decisions of a search, oldest first."""
    try:
        return [json.loads(raw) for raw in reversed(transport.client().lrange(decisions_key(search_id), 0, -1))]
    except Exception:
        return []
