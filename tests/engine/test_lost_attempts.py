"""Issue 36, item 7: a slot runs one evaluation at a time. When a one-slot worker's evaluation is killed (kill -9)
and its slot starts the next one, the killed one is not left ``running`` beside it: it is queued again, shown as
``lost, retrying (attempt 2)``, and its next start shows as ``running (attempt 2)``."""
from __future__ import annotations

import time

import pytest

from tests.engine.conftest import owner
from webapp.control import recording
from webapp.messaging import messages
from webapp.searches.models import Individual
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
    a.refresh_from_db()
    assert recording.mark_started(a, started(a, "vm2/cpu/0", attempt=2))
    assert states(search)[0] == "running (attempt 2)"
