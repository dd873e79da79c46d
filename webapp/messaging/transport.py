"""What crosses Redis between the control loop and the evaluation workers, besides Celery's own messages.

Workers never touch the database: they report through Redis, and the loop (the single writer of a search's
individuals) records what they report.

| key | kind | written by | meaning |
| --- | --- | --- | --- |
| ``nas:results:<search>`` | list | workers | their messages (``webapp.messaging.messages``, JSON), in arrival order |
| ``nas:results:<search>:processing`` | list | the loop | messages taken but not yet committed (reliable queue) |
| ``nas:hb:<search>:<individual>`` | string, TTL | the evaluating slot | heartbeat: who runs it since when |
| ``nas:starts:<search>:<individual>`` | counter | workers | how many times a worker started it (attempts) |
| ``nas:done:<search>:<individual>`` | string | workers | a result was pushed: a redelivered task skips it |
| ``nas:stop:<search>`` | string | the web / services | the search is stopped: queued tasks are skipped |
| ``nas:slot:<node>:<device>:<slot>`` | string, TTL | each worker slot | the slot is alive (JSON: pool, slots, current) |
| ``nas:kept:<search>:<individual>`` | hash, TTL | the evaluating slot | ``weights.pt``, ``model.py``, ``model.onnx`` of a trained individual, until the loop keeps or drops them |
| ``nas:admit:<search>`` | string | the loop | the fitness a result must reach to enter the kept best (absent: any result may) |
| ``nas:node:<node>`` | string | the web / services, the reaper | ``draining`` or ``paused`` (absent: active), ``webapp.messaging.node_state`` |
| ``nas:rejected`` | list, capped | workers | the last task messages a worker refused (JSON: time, reason, message id, body) |

Messages are JSON (never pickle); weights are ``torch.save`` bytes of tensors only, never unpickled as code. The loop moves messages to its processing list with ``LMOVE`` and deletes
them only after the database transaction that records them committed, so a crash of the loop re-reads them;
recording is idempotent.
"""
from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import redis
from django.conf import settings
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.retry import Retry

KEEP = 7 * 24 * 3600  #: how long per-individual counters and markers live
KEPT_TTL = 6 * 3600  #: how long a trained individual's files wait for the loop (it takes them within seconds when it runs)
_clients: dict[str, redis.Redis] = {}


def client() -> redis.Redis:
    """One client per process, which rides out a Redis restart (retries with backoff for about a minute)."""
    url = settings.REDIS_URL
    if url not in _clients:
        _clients[url] = redis.Redis.from_url(
            url,
            socket_connect_timeout=2,
            socket_timeout=10,
            health_check_interval=15,
            retry=Retry(ExponentialBackoff(cap=2.0, base=0.05), retries=40),
            retry_on_error=[redis.ConnectionError, redis.TimeoutError],
        )
    return _clients[url]


def quick_client() -> redis.Redis:
    """One client per process that gives up at once (short timeouts; one immediate retry, for a socket left stale
    by a Redis restart): for best-effort writes that their caller repeats anyway or that expire by themselves.
    A stopping worker whose Redis is gone must not spend a minute of retries on each of them."""
    key = "quick:" + settings.REDIS_URL
    if key not in _clients:
        _clients[key] = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=5,
                                             retry=Retry(NoBackoff(), 1))
    return _clients[key]


def reset_clients() -> None:
    """Forget the cached clients (a forked child must not share its parent's sockets)."""
    _clients.clear()


def results_key(search_id: int) -> str:
    return f"nas:results:{search_id}"


def processing_key(search_id: int) -> str:
    return f"nas:results:{search_id}:processing"


def heartbeat_key(search_id: int, individual_id: int) -> str:
    return f"nas:hb:{search_id}:{individual_id}"


def starts_key(search_id: int, individual_id: int) -> str:
    return f"nas:starts:{search_id}:{individual_id}"


def done_key(search_id: int, individual_id: int) -> str:
    return f"nas:done:{search_id}:{individual_id}"


def stop_key(search_id: int) -> str:
    return f"nas:stop:{search_id}"


def slot_key(node: str, device: str, slot: int) -> str:
    return f"nas:slot:{node}:{device}:{slot}"


def unreadable_key(search_id: int) -> str:
    """The nodes that cannot read the search's data set (``webapp.messaging.data_reach``)."""
    return f"nas:unreadable:{search_id}"


def kept_key(search_id: int, individual_id: int) -> str:
    return f"nas:kept:{search_id}:{individual_id}"


def admit_key(search_id: int) -> str:
    return f"nas:admit:{search_id}"


def prune_key(search_id: int, individual_id: int) -> str:
    """Set by the loop when its pruner stops an individual; its worker reads it after each progress report."""
    return f"nas:prune:{search_id}:{individual_id}"


# --- worker side --------------------------------------------------------------------------------------------


def push(search_id: int, message: dict[str, Any]) -> None:
    """Report to the search's loop; retried by the client while Redis restarts."""
    client().rpush(results_key(search_id), json.dumps(message, allow_nan=False))


DEAD_LETTERS = 200  #: how many refused messages ``nas:rejected`` keeps


def dead_letter(record: dict[str, Any]) -> None:
    """Remember a task message a worker refused (the newest first; only the last :data:`DEAD_LETTERS`)."""
    with client().pipeline() as pipe:
        pipe.lpush("nas:rejected", json.dumps({**record, "time": time.time()})).ltrim("nas:rejected", 0, DEAD_LETTERS - 1)
        pipe.execute()


def dead_letters(limit: int = 50) -> list[dict[str, Any]]:
    """The task messages workers refused lately, newest first."""
    return [json.loads(item) for item in client().lrange("nas:rejected", 0, limit - 1)]


def put_kept(search_id: int, individual_id: int, files: dict[str, bytes]) -> None:
    """Leave a trained individual's files (name -> bytes) for the loop, before its result is pushed."""
    key = kept_key(search_id, individual_id)
    with client().pipeline() as pipe:
        pipe.delete(key).hset(key, mapping=files).expire(key, KEPT_TTL)
        pipe.execute()


def admission(search_id: int) -> float | None:
    """The fitness a result must reach to enter the kept best; ``None`` while any result may."""
    value = client().get(admit_key(search_id))
    return None if value is None else float(value)


def count_start(search_id: int, individual_id: int) -> int:
    """One more start of this individual; returns the attempt number (1 for the first)."""
    key = starts_key(search_id, individual_id)
    with client().pipeline() as pipe:
        pipe.incr(key).expire(key, KEEP)
        attempt, _ = pipe.execute()
    return int(attempt)


def uncount_start(search_id: int, individual_id: int) -> None:
    """An attempt handed back by a paused node: it does not count against ``NAS_MAX_ATTEMPTS``."""
    client().decr(starts_key(search_id, individual_id))


def beat(search_id: int, individual_id: int, info: dict[str, Any]) -> None:
    client().set(heartbeat_key(search_id, individual_id), json.dumps(info), px=int(settings.NAS_HEARTBEAT_TTL * 1000))


def clear_beat(search_id: int, individual_id: int) -> None:
    """Best effort, at once: the heartbeat expires by itself after its TTL."""
    quick_client().delete(heartbeat_key(search_id, individual_id))


def mark_done(search_id: int, individual_id: int) -> None:
    client().set(done_key(search_id, individual_id), "1", ex=KEEP)


def is_done(search_id: int, individual_id: int) -> bool:
    return bool(client().exists(done_key(search_id, individual_id)))


def is_stopped(search_id: int) -> bool:
    return bool(client().exists(stop_key(search_id)))


def is_pruned(search_id: int, individual_id: int) -> bool:
    """Whether the loop asked to stop this individual's training (early stopping)."""
    return bool(client().exists(prune_key(search_id, individual_id)))


def request_prune(search_id: int, individual_id: int) -> None:
    """Ask the worker training this individual to stop at its next report (a finished one is not affected)."""
    client().set(prune_key(search_id, individual_id), "1", ex=KEEP)


def announce_slot(node: str, device: str, slot: int, info: dict[str, Any]) -> None:
    """Tried once: the slot's heartbeat thread announces again at its next beat."""
    quick_client().set(slot_key(node, device, slot), json.dumps({**info, "time": time.time()}), px=int(settings.NAS_HEARTBEAT_TTL * 1000))


def retire_slot(node: str, device: str, slot: int) -> None:
    """Best effort, at once: a stopping worker must not wait a minute on a Redis that is gone (the supervisor
    stops Redis with everything else); the key expires by itself after the heartbeat TTL anyway."""
    quick = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1,
                                 retry=Retry(NoBackoff(), 0))
    try:
        quick.delete(slot_key(node, device, slot))
    finally:
        quick.close()


# --- loop side ----------------------------------------------------------------------------------------------


def set_stopped(search_id: int, stopped: bool) -> None:
    if stopped:
        client().set(stop_key(search_id), "1")
    else:
        client().delete(stop_key(search_id))


@dataclasses.dataclass(frozen=True)
class Taken:
    """A message taken from a results list: its JSON (``data``) and the bytes that came (``raw``, to ack it)."""

    raw: bytes
    data: Any


def take_messages(search_id: int, wait: float, limit: int = 500) -> list[Taken]:
    """Messages left in the processing list by a crashed loop, else new ones: wait up to ``wait`` seconds for
    the first, then take what else is there (up to ``limit``). Each one stays in the processing list until
    :func:`ack_messages`. A message that is not JSON comes back with ``data`` ``None``."""
    redis_ = client()
    source, target = results_key(search_id), processing_key(search_id)
    raw = redis_.lrange(target, 0, limit - 1)
    if not raw:
        first = redis_.blmove(source, target, wait, "LEFT", "RIGHT") if wait > 0 else redis_.lmove(source, target)
        raw = [] if first is None else [first]
        while first is not None and len(raw) < limit:
            more = redis_.lmove(source, target, "LEFT", "RIGHT")
            if more is None:
                break
            raw.append(more)
    taken = []
    for item in raw:
        try:
            taken.append(Taken(item, json.loads(item)))
        except ValueError:
            taken.append(Taken(item, None))
    return taken


def ack_messages(search_id: int, taken: list[Taken]) -> None:
    """Drop these messages from the processing list: they are recorded. Each is removed by its value, never by
    position: a loop that lost its lease while it held messages, and acks them late, can only remove messages
    that were recorded (by it or by its successor, idempotently), never those its successor took meanwhile."""
    if not taken:
        return
    with client().pipeline(transaction=False) as pipe:
        for item in taken:
            pipe.lrem(processing_key(search_id), 1, item.raw)
        pipe.execute()


def heartbeats(search_id: int, individual_ids: list[int]) -> dict[int, dict[str, Any] | None]:
    """The live heartbeat of each individual (``None``: none, or expired)."""
    if not individual_ids:
        return {}
    values = client().mget([heartbeat_key(search_id, i) for i in individual_ids])
    return {i: (json.loads(v) if v else None) for i, v in zip(individual_ids, values)}


def set_admission(search_id: int, fitness: float | None) -> None:
    """Tell workers the fitness a result must reach to be kept (``None``: any result may)."""
    if fitness is None:
        client().delete(admit_key(search_id))
    else:
        client().set(admit_key(search_id), repr(float(fitness)))


def waiting_kept(search_id: int, individual_ids: list[int]) -> dict[int, dict[str, bytes]]:
    """The files waiting for these individuals (those that have some), name -> bytes; they stay in Redis until
    :func:`drop_kept`, so a loop that crashes before its transaction commits finds them again."""
    if not individual_ids:
        return {}
    with client().pipeline() as pipe:
        for individual_id in individual_ids:
            pipe.hgetall(kept_key(search_id, individual_id))
        values = pipe.execute()
    return {i: {name.decode(): data for name, data in files.items()}
            for i, files in zip(individual_ids, values) if files}


def drop_kept(search_id: int, individual_ids: list[int]) -> None:
    if individual_ids:
        client().delete(*[kept_key(search_id, i) for i in individual_ids])


def starts(search_id: int, individual_id: int) -> int:
    value = client().get(starts_key(search_id, individual_id))
    return int(value) if value else 0


def live_slots(pool: str | None = None) -> list[dict[str, Any]]:
    """Every slot whose heartbeat is live (optionally only those serving ``pool``)."""
    redis_ = client()
    keys = list(redis_.scan_iter(match="nas:slot:*", count=1000))
    slots = []
    for key, value in zip(keys, redis_.mget(keys) if keys else []):
        if value:
            info = json.loads(value)
            if pool is None or info.get("pool") == pool:
                slots.append(info)
    return slots


def forget_run(search_id: int, individual_ids: list[int]) -> None:
    """Individuals to be run again (a re-run): their start counts, done markers, heartbeats and prune requests
    removed, so a worker runs them as new and counts their attempts from 1."""
    keys = [key(search_id, pk) for pk in individual_ids
            for key in (starts_key, done_key, heartbeat_key, prune_key)]
    if keys:  # and every node tries the search's data set again (its mount may have been fixed meanwhile)
        keys.append(unreadable_key(search_id))
        client().delete(*keys)


def forget_search(search_id: int) -> None:
    """Remove a deleted search's lists and markers."""
    redis_ = client()
    redis_.delete(results_key(search_id), processing_key(search_id), stop_key(search_id), admit_key(search_id),
                  unreadable_key(search_id))
    for pattern in (f"nas:hb:{search_id}:*", f"nas:starts:{search_id}:*", f"nas:done:{search_id}:*",
                    f"nas:kept:{search_id}:*", f"nas:prune:{search_id}:*"):
        keys = list(redis_.scan_iter(match=pattern, count=1000))
        if keys:
            redis_.delete(*keys)
