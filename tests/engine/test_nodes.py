"""The registry of evaluation workers: fed by the slots' heartbeats, live while they beat, stale after."""
from __future__ import annotations

import pytest

from tests.engine.conftest import finished, launched, simulated_config, wait_until
from webapp.services import nodes

pytestmark = pytest.mark.integration


def test_each_slot_is_listed_live_with_its_counts_then_stale_once_its_worker_died(stack):
    worker = stack.evaluator("gamma", slots=2, wait=False)
    stack.control()
    rows = wait_until(lambda: [r for r in nodes.worker_table() if r["node"] == "gamma" and r["state"] == "live"]
                      if len([r for r in nodes.worker_table() if r["node"] == "gamma"]) == 2 else None, 120)
    assert {(r["device"], r["slots"], r["pool"]) for r in rows} == {("cpu", 2, "eval")}
    assert len({r["name"] for r in rows}) == 2 and all(r["host"] for r in rows)
    finished(launched("counted", simulated_config(evaluations=6, duration=0.2)).pk)
    table = {r["name"]: r for r in nodes.worker_table()}
    assert sum(r["evaluated"] for r in table.values() if r["node"] == "gamma") == 6
    stack.kill(worker)
    wait_until(lambda: all(r["state"] == "stale" for r in nodes.worker_table() if r["node"] == "gamma"), 15,
               message="slots stale")


def test_the_nodes_page_shows_a_new_slot_at_once_and_writes_nothing(engine):
    """A slot that just announced itself is listed live before the reaper registers it, and reading the table
    writes no row: the registry has one writer, the control worker's reaper."""
    from webapp.control import registry
    from webapp.messaging import transport
    from webapp.searches.models import Worker

    info = {"node": "delta", "device": "cpu", "slot": 0, "slots": 1, "pool": "eval", "name": "delta/cpu/0",
            "host": "h", "pid": 1, "current": None}
    transport.announce_slot("delta", "cpu", 0, info)
    rows = [r for r in nodes.worker_table() if r["node"] == "delta"]
    assert [(r["name"], r["state"]) for r in rows] == [("delta/cpu/0", "live")]
    assert Worker.objects.count() == 0
    assert registry.sync_workers() == 1 and Worker.objects.get().name == "delta/cpu/0"


def test_refused_messages_are_listed_for_staff_only(engine, client, django_user_model):
    from django.urls import reverse

    from webapp.messaging import transport

    transport.dead_letter({"reason": "bad or missing signature <script>", "message": "m1", "body": "b",
                           "worker": "w1"})
    staff = django_user_model.objects.create_user("ops", password="pw-ops-12345", is_staff=True)
    user = django_user_model.objects.create_user("someone", password="pw-someone-12345")
    client.force_login(staff)
    html = client.get(reverse("nodes")).content.decode()
    assert 'id="refused"' in html and "bad or missing signature &lt;script&gt;" in html
    client.force_login(user)
    assert 'id="refused"' not in client.get(reverse("nodes")).content.decode()
