"""Drain and pause a node mid-search on the real stack (issue 34): two one-slot CPU workers, simulated
evaluations, a control worker. A drained node finishes what it runs and takes nothing more (also once its
worker is restarted: the state is stored); a paused one hands its evaluation back at once; either way the
search finishes on the other node with every individual recorded once."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from tests.engine.conftest import assert_each_recorded_once, finished, launched, simulated_config, wait_until
from webapp.messaging import transport
from webapp.searches.models import Individual
from webapp.services import node_control

pytestmark = pytest.mark.integration


def staff():
    return get_user_model().objects.get_or_create(username="operator", defaults={"is_staff": True})[0]


def running_on(search_id: int, node: str, timeout: float = 60) -> Individual:
    """An individual of the search being evaluated on ``node`` now (its heartbeat names the node)."""

    def one():
        ids = list(Individual.objects.filter(search_id=search_id, status=Individual.Status.RUNNING)
                   .values_list("pk", flat=True))
        beats = transport.heartbeats(search_id, ids)
        pk = next((pk for pk, info in beats.items() if info and info["node"] == node), None)
        return None if pk is None else Individual.objects.get(pk=pk)

    return wait_until(one, timeout, interval=0.05, message=f"an evaluation running on {node}")


def state_of(node: str) -> str:
    return next(row["state"] for row in node_control.node_rows() if row["node"] == node)


def test_a_drained_node_finishes_its_evaluation_takes_nothing_more_and_stays_drained_when_restarted(stack):
    stack.control(wait=False)
    first = stack.evaluator("drain-a", wait=False)
    stack.evaluator("drain-b")
    search = launched("drain", simulated_config(evaluations=12, duration=1.0, population=4))
    victim = running_on(search.pk, "drain-a")
    node_control.set_state(staff(), "drain-a", "drain")
    drained_at = timezone.now()
    # it finishes what it runs ...
    wait_until(lambda: Individual.objects.get(pk=victim.pk).status in Individual.FINAL, 60, message="its evaluation")
    wait_until(lambda: state_of("drain-a") == "drained", 30, message="drain-a shown drained")
    # ... and a restarted worker of the node (as `up` restarts one) takes nothing either: the state is stored
    stack.kill(first)
    stack.evaluator("drain-a")
    search = finished(search.pk, timeout=120)
    assert search.status == "finished"
    individuals = assert_each_recorded_once(search, 12)
    victim.refresh_from_db()
    assert victim.status == "done" and victim.node == "drain-a"
    late = [i.number for i in individuals if i.node == "drain-a" and i.started > drained_at]
    assert late == [], f"drain-a started {late} after its drain"
    assert {i.node for i in individuals if i.started > drained_at} <= {"drain-b"}


def test_a_paused_node_hands_its_evaluation_back_at_once_and_it_runs_elsewhere(stack):
    stack.control(wait=False)
    worker = stack.evaluator("pause-a", wait=False)
    stack.evaluator("pause-b")
    search = launched("pause", simulated_config(evaluations=4, duration=5.0, population=4))
    victim = running_on(search.pk, "pause-a")
    node_control.set_state(staff(), "pause-a", "pause")
    worker.wait_for("handed back", timeout=30)  # interrupted, not finished: the slot says so
    wait_until(lambda: Individual.objects.get(pk=victim.pk).node == "pause-b", 60, message="re-run on pause-b")
    assert state_of("pause-a") == "paused"
    node_control.set_state(staff(), "pause-a", "resume")  # lifts it: both finish the search
    search = finished(search.pk, timeout=120)
    assert_each_recorded_once(search, 4)
    victim.refresh_from_db()
    assert victim.status == "done" and victim.node == "pause-b"
