"""When a gang worker told to wait gives its candidate back to the queue instead of holding it: one rule for the
real worker (``webapp.worker.device_claims``) and the benchmark's simulator (``benchmarks/allocation_sim.py``).

A worker decides only for its own host (a gang never spans hosts). Told to wait there, it would hold the candidate,
and with it one of its pool processes, until its devices free up, while another host may have devices idle and a
pool process free to pull it. The rule: **hand the candidate back when the allocator, free to choose any host,
would start it now on another host whose worker would pull it** (the same decision, ``decide`` with no ``here``,
over the hosts whose worker has a pool process free and room, with their :func:`spare` devices as the free ones; the
others count as having none). The loop sends it again ahead of the queue (``webapp.messaging.dispatch``: a re-sent
packet has Celery's first priority), so it keeps its turn, and the next worker with room pulls it; a candidate is
handed back at most ``limit`` times, then waits where it is (no ping-pong between hosts that each expect the other
to be faster).

A host's pool processes (``evalworker --gang`` starts ``devices // min(sizes)``) each hold one candidate, running
or waiting: a host's record lists what runs there (``running``) and, as ``waiting``, the candidates its processes
hold while told to wait (``{"search": ..., "since": ..., "seen": ...}``; ``seen``: the last time their worker
decided again, so one left by a killed process is dropped after ``WAIT_STALE`` seconds). A worker pulls only while
its host has room (:func:`room`), so it rarely holds candidates its devices cannot start soon.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from nas.allocation.cluster import decide
from nas.allocation.model import ThroughputModel
from nas.allocation.policy import Allocation, Pending

#: how many times one candidate may be handed back before it waits where it is (a guard: a hand-back goes only to a
#: worker with room, so ping-pong needs the hosts' state to change under it)
LIMIT = 10
#: a waiting entry not refreshed for this many seconds is a leftover of a process that is gone
WAIT_STALE = 60.0


def processes(record: Mapping[str, Any]) -> int:
    """The pool processes of a host's gang worker: one per smallest gang."""
    return int(record["devices"]) // max(1, min(int(size) for size in record["sizes"]))


def _fresh(record: Mapping[str, Any], now: float) -> list[Mapping[str, Any]]:
    """The candidates a host's processes hold while told to wait (entries refreshed within ``WAIT_STALE``)."""
    return [w for w in record.get("waiting", ()) if now - float(w.get("seen", w.get("since", now))) < WAIT_STALE]


def reserved(record: Mapping[str, Any], now: float) -> int:
    """The devices a host's held candidates wait for: each the gang its decision waits for (``gang`` in its
    waiting entry), a smallest gang where the entry does not say."""
    smallest = max(1, min(int(size) for size in record["sizes"]))
    return sum(max(smallest, int(w.get("gang") or smallest)) for w in _fresh(record, now))


def idle_processes(record: Mapping[str, Any], now: float) -> int:
    """The pool processes of a host holding no candidate (neither running nor waiting one)."""
    return max(0, processes(record) - len(record.get("running", ())) - len(_fresh(record, now)))


def spare(record: Mapping[str, Any], now: float) -> int:
    """A host's idle devices beyond those its held candidates wait for (the devices its worker's :func:`room`
    pulls for), from its record: devices less those its running evaluations (of any search) hold, less
    :func:`reserved`."""
    idle = int(record["devices"]) - sum(int(r["gang"]) for r in record.get("running", ()))
    return max(0, idle - reserved(record, now))


def room(free: int, reserved_: int, smallest: int) -> int:
    """How many more candidates a gang worker may pull (``webapp.worker.gang_tap``): the smallest gangs that fit in
    its host's ``free`` idle devices beyond the ``reserved_`` ones its held candidates wait for (:func:`reserved`):
    a candidate told to wait for a gang of 4 keeps the devices that free up for it, as the plan that told it to wait
    assumed, instead of each being taken by the next candidate pulled."""
    return max(0, (free - reserved_) // smallest)


def hand_back(model: ThroughputModel, records: Sequence[Mapping[str, Any]], pending: Pending, now: float,
              here: str, free: Mapping[str, int] | None = None, search: Any = None, handed: int = 0,
              limit: int = LIMIT) -> Allocation | None:
    """For a candidate whose worker on ``here`` was just told to wait: the placement on another host that the
    allocator would start now, with its reason (rule ``handback``), or ``None`` (keep it and wait). ``free``: the
    exact idle devices where known (this host's); ``handed``: how many times the candidate was handed back."""
    if handed >= limit:
        return None
    # the hosts whose worker would pull it now: a process free and room (devices beyond its held candidates'),
    # with those devices as the free ones (the others' free devices are taken by what they hold)
    pulling = {str(r["host"]): spare(r, now) for r in records
               if str(r["host"]) != here and idle_processes(r, now) > 0 and spare(r, now) > 0}
    if not pulling:
        return None
    exact = {str(r["host"]): 0 for r in records if str(r["host"]) not in pulling}  # no process to pull it there
    exact.update({name: count for name, count in (free or {}).items() if name not in pulling})
    exact.update(pulling)
    choice = decide(model, records, pending, now, None, exact, search)
    if choice.host not in pulling:
        return None
    return dataclasses.replace(choice, rule="handback", reason=(
        f"handed back from {here} ({'first' if not handed else _ordinal(handed + 1)} time): a worker with a free "
        f"process on {choice.host} can start it now; {choice.reason}"))


def _ordinal(count: int) -> str:
    return {2: "second", 3: "third"}.get(count, f"{count}th")
