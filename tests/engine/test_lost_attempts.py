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

    def send(packet: dict, signature: str, task_id: str, queue: str) -> None:
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
