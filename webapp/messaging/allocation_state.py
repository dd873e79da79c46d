"""What the control loop and the gang workers share about gangs, in Redis: the work in sight per search (the
loop writes it, the workers' allocators read it), the search's throughput model per (host, gang size) (the
workers update it as their evaluations end, and with each scaling probe's rates), and the candidates a probe timed
that wait for devices (``nas:gang:probed:<search>``: individual -> seconds on one device; the other workers'
decisions read them as ``Pending.probes``), and how many times each candidate was handed back by a worker told to
wait (``nas:gang:handed:<search>``). All are estimates: a lost update costs one measurement, a missing key
means "no end in sight" and one device each."""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable

from nas.allocation import Pending, ThroughputModel
from webapp.messaging import transport

log = logging.getLogger(__name__)

TTL = 7 * 24 * 3600


def model_key(search_id: int) -> str:
    return f"nas:gang:model:{search_id}"


def pending_key(search_id: int) -> str:
    return f"nas:gang:pending:{search_id}"


def probed_key(search_id: int) -> str:
    return f"nas:gang:probed:{search_id}"


def publish_pending(search_id: int, waiting: int, more: int | None) -> None:
    """The loop's view of the work in sight: candidates sent and not started, and how many more the strategy can
    give before its next barrier or its end (``None``: no end known)."""
    try:
        transport.client().set(pending_key(search_id), json.dumps({"waiting": waiting, "more": more}), ex=TTL)
    except Exception as error:
        log.warning("search %s: pending work not published: %s", search_id, error)


def read_pending(search_id: int, known: float | None = None, individual: int | None = None) -> Pending:
    """The work in sight, with ``known`` (the placed candidate's probed seconds on one device) and, as ``probes``,
    the other candidates a probe timed that still wait (``individual``'s own record left out), in the order they
    were probed."""
    try:
        raw = transport.client().get(pending_key(search_id))
        data = json.loads(raw) if raw else {}
    except Exception:
        data = {}
    more = data.get("more")
    probes = tuple(seconds for other, seconds in probed_waiting(search_id) if other != individual)
    waiting = max(1, int(data.get("waiting") or 1), 1 + len(probes))  # those probed wait too
    return Pending(waiting, None if more is None else max(0, int(more)), known=known,
                   probes=probes if known is not None else ())


def record_rates(search_id: int, host: str, rates: dict[int, float]) -> None:
    """Add one scaling probe's steps per second per gang size (at least two sizes) to the search's model."""
    if len(rates) < 2:
        return
    _update(search_id, lambda model: model.observe_rates(host, rates))


def record_probed(search_id: int, individual: int, single: float) -> None:
    """A candidate a probe timed (``single``: its seconds on one device) waits for its devices."""
    try:
        pipe = transport.client().pipeline()
        pipe.hset(probed_key(search_id), str(individual), json.dumps([time.time(), float(single)]))
        pipe.expire(probed_key(search_id), TTL)
        pipe.execute()
    except Exception as error:
        log.warning("search %s: probe of individual %s not shared: %s", search_id, individual, error)


def forget_probed(search_id: int, individual: int) -> None:
    """The probed candidate started (its record's ``single`` carries it now) or was dropped."""
    try:
        transport.client().hdel(probed_key(search_id), str(individual))
    except Exception:
        pass


def probed_of(search_id: int, individual: int) -> float | None:
    """``individual``'s seconds on one device where a probe timed it and it has not started (it was handed back
    by the worker that probed it: the next one decides with that, without probing again)."""
    return dict(probed_waiting(search_id)).get(individual)


def handed_key(search_id: int) -> str:
    return f"nas:gang:handed:{search_id}"


def hand_backs(search_id: int, individual: int) -> int:
    """How many times a worker handed ``individual`` back to the queue (``nas.allocation.hand_back``)."""
    try:
        return int(transport.client().hget(handed_key(search_id), str(individual)) or 0)
    except Exception:
        return 0


def count_hand_back(search_id: int, individual: int) -> None:
    try:
        pipe = transport.client().pipeline()
        pipe.hincrby(handed_key(search_id), str(individual), 1)
        pipe.expire(handed_key(search_id), TTL)
        pipe.execute()
    except Exception as error:
        log.warning("search %s: hand-back of individual %s not counted: %s", search_id, individual, error)


def probed_waiting(search_id: int, stale: float = 3600.0) -> list[tuple[int, float]]:
    """The probed candidates that wait, ``(individual, seconds on one device)``, oldest probe first; one probed
    more than ``stale`` seconds ago is a leftover of a worker that is gone."""
    try:
        raw = transport.client().hgetall(probed_key(search_id))
    except Exception:
        return []
    now, entries = time.time(), []
    for key, value in raw.items():
        try:
            when, seconds = json.loads(value)
            if now - float(when) < stale:
                entries.append((float(when), int(key), float(seconds)))
        except (TypeError, ValueError):
            continue
    return [(individual, seconds) for _, individual, seconds in sorted(entries)]


def load_model(search_id: int) -> ThroughputModel:
    """The search's throughput model (a fresh one where none is stored or it cannot be read)."""
    model = read_model(search_id)
    return model if model is not None else ThroughputModel()


def read_model(search_id: int) -> ThroughputModel | None:
    """The search's throughput model, a fresh one where none is stored yet; ``None`` where it cannot be read."""
    try:
        raw = transport.client().get(model_key(search_id))
        return ThroughputModel.from_state(json.loads(raw)) if raw else ThroughputModel()
    except Exception:
        return None


def record_duration(search_id: int, host: str, gang: int, seconds: float, since: int | None = None) -> None:
    """Add one measured evaluation duration to the search's model (``since``: the model's count of observed
    evaluations when it started, ``ThroughputModel.observe``)."""
    _update(search_id, lambda model: model.observe(host, gang, seconds, since=since))


def _update(search_id: int, change: Callable[[ThroughputModel], None]) -> None:
    try:
        model = load_model(search_id)
        change(model)
        transport.client().set(model_key(search_id), json.dumps(model.state_dict()), ex=TTL)
    except Exception as error:
        log.warning("search %s: throughput measurement not saved: %s", search_id, error)
