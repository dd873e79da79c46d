"""The cluster as the gang workers publish it, and the decision made from it: one code path for the real worker
(``webapp.worker.device_claims``, records read from Redis) and the benchmark's simulator (records kept in memory).

A host's record (JSON data)::

    {"host": "node-a", "devices": 4, "sizes": [1, 2, 4],
     "running": [{"search": 12, "gang": 2, "started": 1700000000.0, "observed": 40, "expected": 310.0,
                  "spread": 0.8}, ...]}

``running`` lists what its devices run, of every search: ``expected`` is the mean seconds the evaluation was
expected to take when it started (its search's throughput model), ``spread`` that model's spread of durations,
``observed`` how many evaluations that model had observed then. The devices of any search count as busy; their time left
is the lognormal expectation given how long they have run: for the deciding search's own, under its model now
(:func:`timed_by`: early ones were published with the prior's guess), for another search's, as published.
An evaluation whose candidate a scaling probe timed also carries ``single`` (its seconds on one device, as the
probe measured them): ``expected`` is then its own length on its gang and ``spread`` the probe's noise, and its
search's model counts it as a measured duration rather than a censored one.
"""
from __future__ import annotations

import dataclasses

from collections.abc import Mapping, Sequence
from typing import Any

from nas.allocation.model import PROBE_NOISE, ThroughputModel, time_left
from nas.allocation.policy import Allocation, Allocator, HostState, Pending


def running_entry(search: Any, gang: int, started: float, model: ThroughputModel, host: str,
                  single: float | None = None) -> dict[str, Any]:
    """What a worker publishes for an evaluation it starts on ``gang`` devices of ``host``; ``single``: the
    candidate's seconds on one device as its scaling probe measured them (its own expectation then, with the probe's
    noise as spread, instead of the search's typical one)."""
    entry = {"search": search, "gang": int(gang), "started": float(started), "observed": model.observed()}
    if single is None:
        return {**entry, "expected": round(model.duration(host, gang), 3), "spread": round(model.spread(), 4)}
    expected = single * model.duration(host, gang) / model.duration(host, 1)
    return {**entry, "expected": round(expected, 3), "spread": PROBE_NOISE, "single": round(float(single), 3)}


def host_state(record: Mapping[str, Any], now: float, free: int | None = None) -> HostState:
    """The allocator's view of one published host at ``now`` (``free``: the exact count where the caller knows it,
    as a worker does for its own host; else devices less the busy ones)."""
    devices = int(record["devices"])
    busy = [time_left(float(r["expected"]), now - float(r["started"]), float(r.get("spread", 0.0)))
            for r in record.get("running", ()) for _ in range(int(r["gang"]))]
    busy = sorted(busy)[:devices]
    idle = devices - len(busy) if free is None else max(0, min(int(free), devices))
    return HostState(str(record["host"]), tuple(int(s) for s in record["sizes"]), devices, idle,
                     tuple(busy[:devices - idle]))


def decide(model: ThroughputModel, records: Sequence[Mapping[str, Any]], pending: Pending, now: float,
           here: str | None = None, free: Mapping[str, int] | None = None, search: Any = None,
           allocator: Allocator | None = None) -> Allocation:
    """The allocation for the next candidate of ``search`` (its ``model``), from the published hosts: run ``here``
    (the host whose worker holds it; ``None``: any), ``free`` the exact idle devices where known; the search's
    running, probed and waiting candidates enter ``model`` and ``pending`` as :func:`seen_by` says, and its running
    ones are timed by ``model`` as it is then (:func:`timed_by`)."""
    pending = seen_by(model, records, pending, now, here, search)
    hosts = [host_state(timed_by(model, record, search), now, (free or {}).get(str(record["host"])))
             for record in records]
    return (allocator or Allocator(model)).choose(hosts, pending, here)


def timed_by(model: ThroughputModel, record: Mapping[str, Any], search: Any) -> Mapping[str, Any]:
    """``record`` with the running evaluations of ``search`` expected as its ``model`` expects them now, not as it
    did when they started (early on, the prior's guess); other searches' as they published them."""
    if search is None or not any(str(r.get("search")) == str(search) for r in record.get("running", ())):
        return record
    host = str(record["host"])
    running = []
    for r in record.get("running", ()):
        if str(r.get("search")) == str(search):
            now = running_entry(search, int(r["gang"]), float(r["started"]), model, host, r.get("single"))
            # a probed one keeps the spread it published (the probe's noise; none where its length is exact)
            r = {**r, "expected": now["expected"], "spread": r.get("spread", now["spread"]) if "single" in r
                 else now["spread"]}
        running.append(r)
    return {**record, "running": running}


def seen_by(model: ThroughputModel, records: Sequence[Mapping[str, Any]], pending: Pending, now: float,
            here: str | None = None, search: Any = None) -> Pending:
    """``model`` as a decision for ``search`` sees it, and ``pending`` with the search's running gangs: its running
    evaluations (by their ``search`` field) enter the model as censored durations (at least as long as they have
    run), the probed ones, and the waiting ones in ``pending.probes``, by their own lengths. ``search`` ``None``:
    both unchanged."""
    if search is None:
        return pending
    entries = [(str(record["host"]), r) for record in records for r in record.get("running", ())
               if str(r.get("search")) == str(search)]
    mine = [(host, int(r["gang"]), now - float(r["started"]), _count(r.get("observed"))) for host, r in entries]
    # what the unprobed ones have run so far: durations of at least that long; the probed ones' own lengths,
    # but not the placed candidate's (``pending.known``): the plans play it at its length, and in the fit it would
    # also stretch every other candidate's (one of 39x the median made the rest look so long that its own gang
    # seemed not to matter, and it ran on a pair for 6,000 s)
    model.running([entry for entry, (_, r) in zip(mine, entries) if r.get("single") is None])
    model.probed([(host, float(r["single"])) for host, r in entries if r.get("single") is not None]
                 + [(here or "", seconds) for seconds in pending.probes])
    if not pending.running:
        pending = dataclasses.replace(pending, running=tuple(entry[1] for entry in mine))
    return pending


def _count(value: Any) -> int | None:
    """A published ``observed`` count, or ``None`` where it is missing or not a count (an older worker's entry)."""
    return value if type(value) is int and value >= 0 else None
