"""A gang worker told to wait hands its candidate back (``webapp.worker.device_claims.run_on_gang``, on the real
Redis): where another host's worker has a free process and devices the planner would start it on now, it raises
``HandedBack`` (the loop sends the candidate again), counts the hand-back and records the decision it made, which
``nas.allocation.hand_back`` reproduces from the recorded state; past the limit it holds the candidate and publishes
it as its host's ``waiting``. The whole path through the loop runs in tests/engine/test_gang_search.py."""
from __future__ import annotations

import os
import time

import pytest

from nas.allocation import Allocation, Pending, ThroughputModel, hand_back
from nas.allocation.handing_back import LIMIT
from webapp.messaging import allocation_state, cluster_state, transport
from webapp.worker import device_claims
from webapp.worker.hand_back import HandedBack

SEARCH = 9123


@pytest.fixture
def gang_host(settings, redis_url, tmp_path, monkeypatch):
    """This process as the gang worker of host ``gang-a`` (2 devices, both held by another live process), and a
    host ``gang-b`` (2 devices, nothing running, its two processes free), published in the real Redis."""
    settings.REDIS_URL = redis_url
    client = transport.client()
    for key in client.keys("nas:gang:*"):
        client.delete(key)
    folder = tmp_path / "ledger"
    monkeypatch.setenv("NAS_GANG_DEVICES", "cpu,cpu")
    monkeypatch.setenv("NAS_GANG_SIZES", "1,2")
    monkeypatch.setenv("NAS_NODE", "gang-a")
    monkeypatch.setattr(device_claims, "ledger_folder", lambda node, owner: folder)
    folder.mkdir()
    for index in range(2):
        (folder / f"device.{index}").write_text(str(os.getppid()))  # a live process holds both devices
    cluster_state.publish_host("gang-b", 2, (1, 2))
    allocation_state.publish_pending(SEARCH, 1, 0)
    transport.set_stopped(SEARCH, False)
    yield client
    transport.set_stopped(SEARCH, False)


def candidate(number: int = 41) -> dict:
    return {"search": SEARCH, "individual": number, "number": 7, "key": "k",
            "evaluation": {"mode": "simulated", "duration": 100.0, "devices": "auto"}}


def never(devices, on_probe=None):
    raise AssertionError("the candidate must not run on this host")


def test_told_to_wait_it_is_handed_back_to_the_host_that_can_start_it(gang_host, monkeypatch):
    monkeypatch.setattr(device_claims, "inside_gang", lambda *args: (0, True))
    monkeypatch.setattr(device_claims, "probe", lambda *args: (None, True))  # no probe: the decision alone
    with pytest.raises(HandedBack) as handed:
        device_claims.run_on_gang(candidate(), never)
    assert str(handed.value).startswith("handed back from gang-a (first time): a worker with a free process on gang-b")
    assert allocation_state.hand_backs(SEARCH, 41) == 1
    decision = cluster_state.read_decisions(SEARCH)[-1]
    assert decision["choice"]["host"] is None and decision["handed"] == 0  # told to wait here, then moved
    pending = decision["pending"]
    again = hand_back(ThroughputModel.from_state(decision["model"]), decision["records"],
                      Pending(**{**pending, "probes": tuple(pending["probes"])}), decision["now"], decision["here"],
                      decision["free"], decision["search"], decision["handed"])
    assert again == Allocation(**decision["hand_back"]) and again.host == "gang-b"
    assert not any(key.startswith(b"wait:") for key in gang_host.hgetall(cluster_state.host_key("gang-a")))


def test_past_the_limit_it_holds_the_candidate_and_publishes_it_as_waiting(gang_host, monkeypatch):
    monkeypatch.setattr(device_claims, "inside_gang", lambda *args: (0, True))
    monkeypatch.setattr(device_claims, "probe", lambda *args: (None, True))
    for _ in range(LIMIT):
        allocation_state.count_hand_back(SEARCH, 42)
    seen = []

    def stop_after_a_wait(seconds):
        seen.append([r.get("waiting") for r in cluster_state.read_hosts() if r["host"] == "gang-a"][0])
        transport.set_stopped(SEARCH, True)

    monkeypatch.setattr(device_claims.time, "sleep", stop_after_a_wait)
    result = device_claims.run_on_gang(candidate(42), never)
    assert result.failure == "stopped"  # it held the candidate until the search stopped
    assert len(seen) == 1 and len(seen[0]) == 1 and seen[0][0]["search"] == SEARCH
    assert seen[0][0]["seen"] >= seen[0][0]["since"] and time.time() - seen[0][0]["seen"] < 60
    assert cluster_state.read_decisions(SEARCH)[-1]["hand_back"] is None
    assert [r["waiting"] for r in cluster_state.read_hosts() if r["host"] == "gang-a"] == [[]]  # removed


def test_a_probed_candidate_handed_back_keeps_its_probe(gang_host, monkeypatch):
    allocation_state.record_probed(SEARCH, 43, 250.0)  # timed by the worker that handed it back
    monkeypatch.setattr(device_claims, "inside_gang", lambda *args: pytest.fail("probed again"))
    monkeypatch.setattr(device_claims, "probe", lambda *args: pytest.fail("probed again"))
    with pytest.raises(HandedBack):
        device_claims.run_on_gang(candidate(43), never)
    assert cluster_state.read_decisions(SEARCH)[-1]["pending"]["known"] == 250.0


def test_the_gang_worker_pulls_only_while_its_host_has_room(gang_host, tmp_path, monkeypatch):
    from types import SimpleNamespace

    from nas.allocation import room
    from webapp.worker.gang_tap import GangTap

    class Channel:
        def can_consume(self):
            return True  # Celery's own limit: a process is free

    qos = Channel()
    consumer = SimpleNamespace(task_consumer=SimpleNamespace(channel=SimpleNamespace(qos=qos)))
    tap = GangTap(consumer, "gang-a")
    held = [0]
    monkeypatch.setattr(tap, "held", lambda: held[0])
    assert qos.can_consume()  # before the first check: Celery's limit alone
    tap.check()  # both devices held by another process: no room
    assert tap.limit == 0 and not qos.can_consume()
    installed = qos.can_consume.__func__
    tap.book.release([1])
    tap.check()
    assert tap.limit == 1 and qos.can_consume()
    held[0] = 1  # it pulled one: the allowance is used until the next check
    assert not qos.can_consume()
    held[0] = 0
    cluster_state.publish_wait("gang-a", "p-1", {"search": SEARCH, "since": time.time(), "seen": time.time()})
    tap.check()  # the free device is for the candidate held there (an entry without its gang: a smallest one)
    assert tap.limit == 0 and not qos.can_consume()
    assert qos.can_consume.__func__ is installed  # installed once, not wrapped again at each check
    cluster_state.remove_wait("gang-a", "p-1")
    tap.book.release([0])  # both devices free
    cluster_state.publish_wait("gang-a", "p-2", {"search": SEARCH, "since": time.time(), "seen": time.time(),
                                                 "gang": 2})
    tap.check()  # both are kept for the gang of 2 the candidate held there waits for
    assert tap.limit == 0 and not qos.can_consume()
    cluster_state.publish_wait("gang-a", "p-2", {"search": SEARCH, "since": time.time(), "seen": time.time(),
                                                 "gang": 1})
    tap.check()  # told a gang of 1 now: the other device is free to pull for
    assert tap.limit == 1 and qos.can_consume()
    assert [room(4, 0, 1), room(4, 2, 2), room(3, 0, 2), room(1, 2, 1)] == [4, 1, 1, 0]


def test_a_hand_back_decided_at_the_probe_inside_the_evaluation_hands_back_once_the_device_is_free(gang_host,
                                                                                                   monkeypatch):
    moved = Allocation("gang-b", 2, "handed back from gang-a (first time): ...", "handback")
    monkeypatch.setattr(device_claims, "inside_gang", lambda *args: (1, True))
    monkeypatch.setattr(device_claims, "choose", lambda *args, **kwargs: moved)
    book = device_claims.ledger()
    book.release([1])  # one device free to probe on
    ran = []

    def evaluate(devices, on_probe=None):
        ran.append(devices)
        assert on_probe(10.0, 1000.0) is False  # the decision at its probe: not this device
        return device_claims.EvaluationResult.failed("declined", "ended at its probe")

    with pytest.raises(HandedBack, match="handed back from gang-a"):
        device_claims.run_on_gang(candidate(44), evaluate)
    assert ran == [["cpu"]] and 1 in book.free()  # probed on one device, given back before handing back
    assert allocation_state.hand_backs(SEARCH, 44) == 1  # counted once
