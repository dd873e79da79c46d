"""Issue 36, item 7: a slot runs one evaluation at a time. When a one-slot worker's evaluation is killed (kill -9)
and its slot starts the next one, the killed one is not left ``running`` beside it: it is queued again, shown as
``lost, retrying (attempt 2)``, and its next start shows as ``running (attempt 2)``."""
from __future__ import annotations

import time

import pytest

from tests.engine.conftest import owner
from webapp.control import recording
from webapp.messaging import messages
from webapp.searches.models import Attempt, Individual
from webapp.services import lifecycle, queries

CONFIG = {"space": {"name": "chain", "max_layers": 3},
          "strategy": {"name": "random", "seed": 1, "params": {"max_evaluations": 4}},
          "evaluation": {"mode": "simulated", "duration": 0.0}}


def started(individual: Individual, slot: str, attempt: int = 1) -> messages.Started:
    node, device, _ = slot.split("/")
    origin = messages.Origin(search=individual.search_id, individual=individual.pk, number=individual.number,
                             task_id="t", node=node, device=device, slot=slot)
    return messages.Started(origin, attempt=attempt, time=time.time())


def states(search) -> dict[int, str]:
    return {row["number"]: row["state"] for row in queries.individuals_page(search, {}).rows}


@pytest.mark.django_db
def test_the_next_start_on_a_slot_marks_its_killed_evaluation_lost_and_never_two_run_on_it():
    search = lifecycle.create_search(owner(), "one slot", CONFIG)
    search.status = "running"
    search.save()
    a, b, c = (Individual.objects.create(search=search, number=n, genome={}, key=f"k{n}", status="queued")
               for n in range(3))
    for individual in (a, b, c):
        Individual.objects.filter(pk=individual.pk).update(dispatched=search.created)
        individual.refresh_from_db()
    assert recording.mark_started(a, started(a, "vm/cpu/0")) and recording.lost_on_slot(a) == []
    assert recording.mark_started(c, started(c, "vm/cpu/1")) and recording.lost_on_slot(c) == []
    # a's pool process was killed; the slot's next process takes b
    assert recording.mark_started(b, started(b, "vm/cpu/0"))
    assert [i.number for i in recording.lost_on_slot(b)] == [0]
    running = Individual.objects.filter(search=search, status="running")
    assert sorted(running.values_list("slot", flat=True)) == ["vm/cpu/0", "vm/cpu/1"]  # one per slot
    assert states(search) == {0: "lost, retrying (attempt 2)", 1: "running", 2: "running"}
    # the lost attempt leaves its reason and node (issue 34)
    lost = Attempt.objects.get(individual=a)
    assert (lost.number, lost.outcome, lost.reason, lost.node) == (1, "lost", "worker_lost", "vm")
    assert "started #1" in lost.message
    a.refresh_from_db()
    assert recording.mark_started(a, started(a, "vm2/cpu/0", attempt=2))
    assert states(search)[0] == "running (attempt 2)"


@pytest.mark.django_db
def test_a_result_records_where_and_when_its_own_attempt_ran_not_a_later_start_elsewhere():
    """Sent again while its first attempt still ran (a queue that looked stuck under load), an individual starts
    on a second slot; the first attempt's result comes in first. Its row says where that attempt ran and when it
    started, never the other node with the second start's time (a drained node once seemed to start it late)."""
    from webapp.searches import accounting

    search = lifecycle.create_search(owner(), "two starts", CONFIG)
    search.status, search.stats = "running", accounting.new_stats(time.time())
    search.save()
    individual = Individual.objects.create(search=search, number=0, genome={}, key="k0", status="queued")
    first, second = started(individual, "a/cpu/0"), started(individual, "b/cpu/0", attempt=2)
    assert recording.mark_started(individual, first)
    second = messages.Started(second.origin, attempt=2, time=first.time + 30)
    assert recording.mark_started(individual, second)
    result = messages.parse({
        "type": "result", "search": search.pk, "individual": individual.pk, "number": 0, "task_id": "t",
        "node": "a", "device": "cpu", "slot": "a/cpu/0", "attempt": 1, "started": first.time,
        "finished": first.time + 40, "duration": 40.0, "packet_bytes": 0,
        "result": {"status": "ok", "fitness": 0.5, "metrics": {}, "timings": {}, "curve": []}})
    recording.record_result(search, individual, result, nbytes=0)
    individual.refresh_from_db()
    assert (individual.node, individual.slot, individual.status) == ("a", "a/cpu/0", "done")
    assert individual.started == recording.when(first.time)
    assert (individual.finished - individual.started).total_seconds() == pytest.approx(40.0)


@pytest.mark.integration
def test_a_loop_queues_again_and_announces_an_attempt_its_slot_outlived(engine, monkeypatch):
    """The loop's side, on a real Redis and database: the first evaluation "dies" after its start (its message
    held back, as a killed pool process leaves it), the slot's next evaluation starts, then the held one is
    redelivered. It ends done at attempt 2, with an ``individual.lost`` event between, and every result once."""
    from tests.engine.conftest import assert_each_recorded_once
    from webapp.control import lease
    from webapp.control.loop import SearchLoop
    from webapp.messaging import signing, transport
    from webapp.searches.models import Event, Search
    from webapp.worker import runner, slots

    monkeypatch.setattr(lifecycle.dispatch, "start_loop", lambda search_id: None)
    config = {**CONFIG, "strategy": {"name": "regularized", "seed": 4,
                                     "params": {"population": 4, "sample_size": 2, "max_evaluations": 6}}}
    search = lifecycle.launch(lifecycle.create_search(owner(), "a kill", config))
    held: list[tuple[dict, str, int]] = []
    victim: list[int] = []

    def send(packet: dict, signature: str, task_id: str, queue: str, first: bool = False) -> None:
        parsed = signing.parse(packet, signature)
        share = parsed.nbytes() // max(parsed.ind_len, 1)
        todo = list(parsed.ind_set)
        if not victim:  # the first evaluation starts, and its process is killed
            first = todo.pop(0)
            victim.append(first["individual"])
            attempt = transport.count_start(search.pk, first["individual"])
            me = slots.identity()
            origin = messages.Origin(search=search.pk, individual=first["individual"], number=first["number"],
                                     task_id=task_id, node=me.node, device=me.device, slot=me.name)
            transport.push(search.pk, messages.to_dict(messages.Started(origin, attempt=attempt, time=time.time())))
            held.append((first, task_id, share))
        for individual in todo:  # the slot goes on with the next evaluation ...
            time.sleep(0.01)
            runner.evaluate_individual(individual, task_id, share)
        if todo and held:  # ... then the broker hands the killed one out again
            runner.evaluate_individual(*held.pop())

    owner_id = lease.new_owner()
    assert lease.take(search.pk, owner_id)
    assert SearchLoop(search.pk, owner_id, send=send).run() == Search.Status.FINISHED
    search.refresh_from_db()
    assert_each_recorded_once(search, 6)
    lost = Individual.objects.get(pk=victim[0])
    assert lost.status == Individual.Status.DONE and lost.attempts == 2
    assert list(Attempt.objects.filter(individual=lost).values_list("number", "outcome")) == [(1, "lost"), (2, "ok")]
    assert [e.data["number"] for e in Event.objects.filter(search=search, type="individual.lost")] == [lost.number]


@pytest.mark.integration
def test_an_evaluation_that_ends_while_the_loop_reads_its_beat_is_recorded_not_lost(engine, monkeypatch):
    """The race behind a stop that once left a finished evaluation ``queued``: the loop finds no heartbeat for an
    evaluation that started long ago, just as its worker ends it. The worker pushes its result before it clears
    the beat, and the loop records what waits before it calls a silent worker dead: every individual ends done
    at its first attempt, none is recorded lost or sent again."""
    from tests.engine.conftest import assert_each_recorded_once
    from webapp.control import lease
    from webapp.control.loop import SearchLoop
    from webapp.messaging import signing, transport
    from webapp.searches.models import Search
    from webapp.worker import runner, slots

    monkeypatch.setattr(lifecycle.dispatch, "start_loop", lambda search_id: None)
    search = lifecycle.launch(lifecycle.create_search(owner(), "ends as looked at", CONFIG))
    waiting: list[tuple[dict, str, int]] = []
    sent: list[int] = []

    def send(packet: dict, signature: str, task_id: str, queue: str, first: bool = False) -> None:
        parsed = signing.parse(packet, signature)
        share = parsed.nbytes() // max(parsed.ind_len, 1)
        me = slots.identity()
        for individual in parsed.ind_set:  # started a minute ago, no beat now: its worker looks dead
            sent.append(individual["number"])
            origin = messages.Origin(search=search.pk, individual=individual["individual"],
                                     number=individual["number"], task_id=task_id, node=me.node,
                                     device=me.device, slot=me.name)
            transport.push(search.pk, messages.to_dict(messages.Started(origin, attempt=1, time=time.time() - 60)))
            waiting.append((individual, task_id, share))

    cleared_after_push: list[bool] = []
    real_clear, real_heartbeats = transport.clear_beat, transport.heartbeats

    def clear_beat(search_id: int, individual_id: int) -> None:
        cleared_after_push.append(transport.is_done(search_id, individual_id))
        real_clear(search_id, individual_id)

    def heartbeats(search_id: int, individual_ids: list[int]):
        beats = real_heartbeats(search_id, individual_ids)
        while waiting:  # ... and each ends right after the loop read its (missing) beat
            runner.evaluate_individual(*waiting.pop())
        return beats

    monkeypatch.setattr(transport, "clear_beat", clear_beat)
    monkeypatch.setattr(transport, "heartbeats", heartbeats)
    owner_id = lease.new_owner()
    assert lease.take(search.pk, owner_id)
    assert SearchLoop(search.pk, owner_id, send=send).run() == Search.Status.FINISHED
    search.refresh_from_db()
    assert_each_recorded_once(search, 4)
    assert sorted(sent) == [0, 1, 2, 3]  # nothing sent again
    assert not Attempt.objects.filter(individual__search=search, outcome="lost").exists()
    assert set(Individual.objects.filter(search=search).values_list("attempts", flat=True)) == {1}
    assert cleared_after_push and all(cleared_after_push)


@pytest.mark.django_db
def test_a_candidate_its_slot_gave_back_is_not_lost_when_the_slot_starts_the_next():
    """A gang worker told to wait hands its candidate back (``skipped``) and its slot pulls the next one: the loop
    reads the skip before that start, so the candidate it gave back is queued, never taken for an attempt that
    died on the slot (a lost attempt recorded, and the candidate sent twice)."""
    search = lifecycle.create_search(owner(), "given back", CONFIG)
    search.status = "running"
    search.save()
    a, b = (Individual.objects.create(search=search, number=n, genome={}, key=f"k{n}", status="queued",
                                      dispatched=search.created) for n in range(2))
    assert recording.mark_started(a, started(a, "vm/cpux2/0"))
    recording.mark_given_back(a)
    assert recording.mark_started(b, started(b, "vm/cpux2/0")) and recording.lost_on_slot(b) == []
    a.refresh_from_db()
    assert a.status == "queued" and not Attempt.objects.filter(individual=a).exists()
    Individual.objects.filter(pk=b.pk).update(status="done")  # a late skip never reopens a final individual
    b.refresh_from_db()
    recording.mark_given_back(b)
    b.refresh_from_db()
    assert b.status == "done"
