"""When a gang worker told to wait hands its candidate back (``nas.allocation.hand_back``): only to a host whose
worker has a free pool process and room (idle devices beyond what its held candidates need), where the planner,
free to choose the host, would start it now; at most ``LIMIT`` times per candidate."""
from __future__ import annotations

import pytest

from nas.allocation import Pending, ThroughputModel, decide, hand_back, idle_processes, reserved, room, running_entry
from nas.allocation import spare
from nas.allocation.handing_back import LIMIT, WAIT_STALE

NOW = 1000.0


def record(name: str, running: int = 0, waiting: int = 0, model: ThroughputModel | None = None,
           seen: float = NOW) -> dict:
    """A host of 4 devices (gangs of 1, 2 or 4: four pool processes) running ``running`` one-device evaluations
    and holding ``waiting`` candidates told to wait."""
    model = model or ThroughputModel(prior_duration=100.0, prior_spread=0.3)
    return {"host": name, "devices": 4, "sizes": [1, 2, 4],
            "running": [running_entry(1, 1, NOW - 10.0, model, name) for _ in range(running)],
            "waiting": [{"search": 1, "since": NOW - 5.0, "seen": seen} for _ in range(waiting)]}


def test_idle_processes_count_what_runs_and_what_waits_and_drop_stale_waits():
    assert idle_processes(record("a"), NOW) == 4
    assert idle_processes(record("a", running=2, waiting=1), NOW) == 1
    assert idle_processes(record("a", running=4, waiting=2), NOW) == 0  # never below none
    assert idle_processes(record("a", waiting=3, seen=NOW - WAIT_STALE - 1), NOW) == 4  # their process is gone


def test_spare_devices_are_the_idle_ones_less_a_smallest_gang_per_held_candidate():
    assert spare(record("a"), NOW) == 4
    assert spare(record("a", running=1, waiting=2), NOW) == 1
    assert spare(record("a", running=3, waiting=2), NOW) == 0  # never below none
    assert spare(record("a", running=1, waiting=2, seen=NOW - WAIT_STALE - 1), NOW) == 3  # their process is gone
    pairs = dict(record("a", waiting=1), sizes=[2, 4])
    assert spare(pairs, NOW) == 2  # its smallest gang is 2


def test_a_held_candidate_keeps_the_devices_of_the_gang_it_waits_for():
    quad = record("a", running=2)
    quad["waiting"] = [{"search": 1, "since": NOW - 5.0, "seen": NOW, "gang": 4}]
    assert reserved(quad, NOW) == 4 and spare(quad, NOW) == 0  # its 2 idle devices are kept for the gang of 4
    assert room(2, reserved(quad, NOW), 1) == 0  # its worker pulls nothing that would take them
    quad["waiting"].append({"search": 1, "since": NOW - 5.0, "seen": NOW})  # an entry without its gang
    assert reserved(quad, NOW) == 5  # counts a smallest gang
    quad["waiting"][0]["seen"] = NOW - WAIT_STALE - 1  # its process is gone: nothing kept for it
    assert reserved(quad, NOW) == 1 and spare(quad, NOW) == 1
    assert [room(4, 0, 1), room(4, 2, 2), room(3, 0, 2), room(1, 2, 1), room(4, 1, 1)] == [4, 1, 1, 0, 3]


def test_a_candidate_told_to_wait_goes_to_a_host_that_would_start_it_now():
    model = ThroughputModel(prior_duration=100.0, prior_spread=0.3)
    records = [record("a", running=4, model=model), record("b", model=model)]
    pending = Pending(1, 0)
    assert decide(model, records, pending, NOW, here="a", free={"a": 0}, search=1).host is None  # told to wait
    moved = hand_back(model, records, pending, NOW, "a", {"a": 0}, search=1)
    assert moved is not None and moved.host == "b" and moved.rule == "handback"
    assert moved.reason.startswith("handed back from a (first time): a worker with a free process on b")
    assert moved.gang == decide(model, records, pending, NOW, here="b", search=1).gang  # what b's worker decides


def test_no_hand_back_without_a_free_process_or_past_the_limit():
    model = ThroughputModel(prior_duration=100.0, prior_spread=0.3)
    busy_b = [record("a", running=4, model=model), record("b", waiting=4, model=model)]  # b's processes all hold one
    assert hand_back(model, busy_b, Pending(1, 0), NOW, "a", {"a": 0}, search=1) is None
    records = [record("a", running=4, model=model), record("b", model=model)]
    assert hand_back(model, records, Pending(1, 0), NOW, "a", {"a": 0}, search=1, handed=LIMIT - 1) is not None
    assert hand_back(model, records, Pending(1, 0), NOW, "a", {"a": 0}, search=1, handed=LIMIT) is None


def test_no_hand_back_where_the_planner_would_not_start_it_elsewhere_now():
    # b's worker has two processes free, but its four devices run two gangs of 2: the candidate waits where it is
    model = ThroughputModel(prior_duration=100.0, prior_spread=0.3)
    b = record("b", model=model)
    b["running"] = [running_entry(1, 2, NOW - 10.0, model, "b") for _ in range(2)]
    records = [record("a", running=4, model=model), b]
    assert idle_processes(b, NOW) == 2
    assert hand_back(model, records, Pending(1, 0), NOW, "a", {"a": 0}, search=1) is None


def test_no_hand_back_to_a_host_whose_idle_devices_its_held_candidates_need():
    # b: 6 devices (gangs of 1 or 2: six processes), two gangs of 2 running, two devices idle; once it holds two
    # candidates told to wait, its worker pulls nothing more (``room`` 0) though two processes are free: a candidate
    # handed back to it would only wait in the queue
    model = ThroughputModel(prior_duration=100.0, prior_spread=0.3)
    b = {"host": "b", "devices": 6, "sizes": [1, 2], "waiting": [],
         "running": [running_entry(1, 2, NOW - 10.0, model, "b") for _ in range(2)]}
    records = [record("a", running=4, model=model), b]
    assert hand_back(model, records, Pending(1, 0), NOW, "a", {"a": 0}, search=1).host == "b"
    b["waiting"] = [{"search": 2, "since": NOW - 5.0, "seen": NOW} for _ in range(2)]  # another search's
    assert idle_processes(b, NOW) == 2 and spare(b, NOW) == 0
    assert hand_back(model, records, Pending(1, 0), NOW, "a", {"a": 0}, search=1) is None


@pytest.mark.parametrize("handed, word", [(1, "second"), (2, "third")])
def test_the_reason_counts_the_hand_backs(handed, word):
    model = ThroughputModel(prior_duration=100.0, prior_spread=0.3)
    records = [record("a", running=4, model=model), record("b", model=model)]
    moved = hand_back(model, records, Pending(1, 0), NOW, "a", {"a": 0}, search=1, handed=handed)
    assert f"({word} time)" in moved.reason
