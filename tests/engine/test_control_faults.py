"""The control worker or Redis itself dies mid-search: the search resumes from its saved state, nothing is
lost or recorded twice, and never do two loops run one search at once."""
from __future__ import annotations

import os
import signal
import time

import pytest

from tests.engine.conftest import assert_each_recorded_once, finished, launched, simulated_config, wait_until
from webapp.searches.models import Individual, Search
from webapp.messaging import dispatch

pytestmark = pytest.mark.integration


def done_count(search_id: int) -> int:
    return Individual.objects.filter(search_id=search_id, status__in=Individual.FINAL).count()


def test_a_killed_control_worker_is_replaced_and_only_one_loop_ever_runs(stack):
    stack.evaluator("alpha", slots=2, wait=False)
    first, second = stack.control(wait=False), stack.control()
    search = launched("control killed", simulated_config(evaluations=30, duration=0.3))
    wait_until(lambda: done_count(search.pk) >= 8, 60, message="8 evaluations done")
    holder = Search.objects.get(pk=search.pk).lease_owner
    pid = int(holder.split(":")[1])
    dead = stack.holding(pid)
    killed = stack.kill(dead)
    survivor = second if dead is first else first
    saved = Search.objects.get(pk=search.pk).evaluations_done

    survivor.wait_for(f"search {search.pk}: loop", timeout=30)
    resumed = time.time() - killed
    # A second and third loop asked for meanwhile find the lease held and do nothing.
    dispatch.start_loop(search.pk)
    dispatch.start_loop(search.pk)
    search = finished(search.pk)
    assert search.status == Search.Status.FINISHED, search.status_reason
    # The loop releases its lease just after it wrote the end: wait for it rather than race it.
    wait_until(lambda: Search.objects.get(pk=search.pk).lease_owner == "", 30, message="the lease released")
    assert_each_recorded_once(search, 30)
    assert search.evaluations_done == 30 and saved >= 8
    survivor.wait_for("held by a live loop", timeout=10)
    assert "lease taken over" not in survivor.text  # no loop ever had to be stopped by another
    assert all(i.status == Individual.Status.DONE for i in Individual.objects.filter(search=search))
    print(f"a new loop took over {resumed:.2f} s after the control worker was killed (lease {3} s)")


def test_a_search_survives_a_redis_restart(stack, redis_process):
    stack.evaluator("alpha", wait=False)
    stack.evaluator("beta", wait=False)
    stack.control()
    search = launched("redis restart", simulated_config(evaluations=24, duration=0.4))
    wait_until(lambda: done_count(search.pk) >= 6, 60, message="6 evaluations done")
    redis_process.stop()
    time.sleep(1.5)  # workers, the loop and the reaper all lose their connections meanwhile
    redis_process.start()
    search = finished(search.pk, timeout=120)
    assert search.status == Search.Status.FINISHED, search.status_reason
    individuals = assert_each_recorded_once(search, 24)
    assert all(i.status == Individual.Status.DONE for i in individuals)


def process_state(pid: int) -> str:
    """The kernel's state letter of ``pid`` (``T``: stopped)."""
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0]


def test_a_loop_that_stalls_past_its_lease_never_writes_again(stack):
    """The lease fences: a loop frozen (SIGSTOP) with packets in hand, about to mark them sent, until a second
    loop has taken the search over, sent them itself and recorded their results, writes nothing when it wakes.
    (Unfenced, it marked those finished individuals queued again: the search never ended.)"""
    from webapp.control import faults
    from webapp.messaging import transport

    stack.evaluator("alpha", slots=2, wait=False)
    stack.control(wait=False), stack.control()  # two: the other one takes the search over
    search = launched("stalled loop", simulated_config(evaluations=30, duration=0.3))
    wait_until(lambda: done_count(search.pk) >= 6, 60, message="6 evaluations done")
    pid = int(Search.objects.get(pk=search.pk).lease_owner.split(":")[1])
    transport.client().set(faults.freeze_key(search.pk), "send")
    wait_until(lambda: process_state(pid) == "T", 30, interval=0.05, message="the loop frozen")
    frozen_owner = Search.objects.get(pk=search.pk).lease_owner
    # What the frozen loop created and was about to send: created and committed, not marked sent.
    held = list(Individual.objects.filter(search=search, dispatched__isnull=True).values_list("pk", flat=True))
    assert held
    # The lease expires; a reaper starts a second loop, which takes the search over and goes on.
    wait_until(lambda: Search.objects.get(pk=search.pk).lease_owner not in ("", frozen_owner), 60,
               message="a second loop took over")
    wait_until(lambda: Individual.objects.filter(pk__in=held, status=Individual.Status.DONE).count() == len(held),
               60, message="the second loop sent and recorded what the first held")
    os.kill(pid, signal.SIGCONT)
    stalled = stack.holding(pid)
    stalled.wait_for("lease taken over; this loop stops", timeout=30)
    search = finished(search.pk, timeout=120)
    assert search.status == Search.Status.FINISHED, search.status_reason
    individuals = assert_each_recorded_once(search, 30)
    assert all(i.status == Individual.Status.DONE for i in individuals)
    stats = search.stats
    assert stats["done"] + stats["failed"] == 30 == search.evaluations_done  # no stale write overwrote them
    assert sum(node["count"] for node in stats["nodes"].values()) == 30
