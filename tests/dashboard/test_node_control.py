"""Drain, pause and resume a node (issue 34): the state store in Redis and the database, who may change it,
the API's and the page's answers, the CLI, and a search page that says when none of its workers takes work."""
from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from webapp.control import registry
from webapp.messaging import messages, node_state, transport
from webapp.searches.models import NodeControl, Search
from webapp.services import node_control


@pytest.fixture(autouse=True)
def clean_nodes():
    def clear():
        keys = [*transport.client().scan_iter("nas:node:*"), *transport.client().scan_iter("nas:slot:*")]
        if keys:
            transport.client().delete(*keys)

    clear()
    yield
    clear()


def announce(node: str, slot: int = 0, current: dict | None = None, pool: str = "eval") -> None:
    transport.announce_slot(node, "cpu", slot, {"node": node, "device": "cpu", "slot": slot, "slots": 1, "pool": pool,
                                                "name": f"{node}/cpu/{slot}", "host": node, "pid": 1,
                                                "current": current})


def running(search: Search) -> Search:
    search.status = Search.Status.RUNNING
    search.save(update_fields=["status"])
    return search


def test_the_state_store_defaults_to_active_and_refuses_unknown_states():
    assert node_state.get("n1") == "active" and node_state.takes_work("active")
    node_state.put("n1", "draining")
    node_state.put("n2", "paused")
    assert node_state.states() == {"n1": "draining", "n2": "paused"}
    assert node_state.states(["n1", "n3"]) == {"n1": "draining", "n3": "active"}
    assert not node_state.takes_work("draining") and not node_state.takes_work("paused")
    with pytest.raises(ValueError, match="one of active, draining, paused"):
        node_state.put("n1", "asleep")
    node_state.put("n1", "active")
    assert node_state.get("n1") == "active" and "n1" not in node_state.states()


def test_staff_drains_a_node_stored_in_redis_and_the_database_and_shown_drained_once_idle(users):
    announce("gpu1", current={"search": 1, "individual": 2, "number": 0})
    row = node_control.set_state(users["staff"], "gpu1", "drain")
    assert row["state"] == "draining" and row["busy"] == 1  # it finishes what it runs
    assert node_state.get("gpu1") == "draining"
    assert NodeControl.objects.get(node="gpu1").state == "draining"
    announce("gpu1", current=None)
    assert [r["state"] for r in node_control.node_rows()] == ["drained"]
    node_control.set_state(users["staff"], "gpu1", "resume")
    assert node_state.get("gpu1") == "active" and NodeControl.objects.get(node="gpu1").state == "active"


def test_a_state_lost_with_redis_is_written_back_by_the_reaper(users):
    announce("gpu1")
    node_control.set_state(users["staff"], "gpu1", "pause")
    transport.client().delete(node_state.key("gpu1"))  # Redis restarted empty
    assert registry.restore_node_states() == 1
    assert node_state.get("gpu1") == "paused"


def test_unknown_node_or_action_is_a_404_that_changes_nothing(users, client):
    announce("gpu1")
    with pytest.raises(node_control.NodeError, match="No node 'ghost' is known") as error:
        node_control.set_state(users["staff"], "ghost", "drain")
    assert error.value.status == 404
    client.force_login(users["staff"])
    answer = client.post("/api/nodes/ghost/drain/")
    assert answer.status_code == 404 and "No node 'ghost'" in answer.json()["error"]
    answer = client.post("/api/nodes/gpu1/sleep/")
    assert answer.status_code == 404 and "the actions are drain, pause, resume" in answer.json()["error"]
    assert not NodeControl.objects.exists() and node_state.states() == {}


def test_only_staff_or_the_owner_of_every_served_search_may_change_a_node(users, search, client):
    running(search)  # the pool 'eval' search of "owner": gpu1 serves it
    announce("gpu1")
    client.force_login(users["other"])
    answer = client.post("/api/nodes/gpu1/drain/")
    assert answer.status_code == 403 and "serves searches of owner" in answer.json()["error"]
    assert node_state.get("gpu1") == "active" and not NodeControl.objects.exists()
    page = client.post("/nodes/gpu1/drain/")
    assert page.status_code == 403 and b"Only staff" in page.content
    # everyone sees the state
    assert client.get("/api/nodes/").json()["nodes"][0]["state"] == "active"
    client.force_login(users["owner"])
    answer = client.post("/api/nodes/gpu1/drain/")
    assert answer.status_code == 200 and answer.json()["state"] == "drained"
    assert client.get("/api/nodes/").json()["nodes"][0] == {**answer.json()}


def test_a_node_that_serves_no_search_of_a_user_is_for_staff_only(users, client):
    announce("gpu1")
    client.force_login(users["owner"])
    answer = client.post("/api/nodes/gpu1/pause/")
    assert answer.status_code == 403 and "serves no search of yours" in answer.json()["error"]


def test_the_nodes_page_has_a_button_per_action_and_the_state(users, client):
    announce("gpu1")
    client.force_login(users["staff"])
    response = client.post("/nodes/gpu1/pause/", follow=True)
    page = response.content.decode()
    assert "Node gpu1 is paused." in page
    assert 'data-node="gpu1"' in page and ">paused<" in page
    for action in ("drain", "pause", "resume"):
        assert f'action="/nodes/gpu1/{action}/"' in page


def test_a_running_search_whose_every_worker_is_drained_says_so(users, search, owner_client):
    running(search)
    announce("gpu1")
    announce("gpu2")
    node_state.put("gpu1", "draining")
    # the notice's place is always there (hidden while empty): the page's events fill it live
    assert b'id="workers-idle" hidden></p>' in owner_client.get(f"/searches/{search.pk}/").content
    node_state.put("gpu2", "paused")
    page = owner_client.get(f"/searches/{search.pk}/").content.decode()
    assert "Every worker of the pool &#x27;eval&#x27; is drained or paused: gpu1 (draining), gpu2 (paused)" in page


def test_the_cli_lists_and_drains_and_refuses_an_unknown_node(users, capsys):
    announce("gpu1")
    users["staff"].is_superuser = True
    users["staff"].save()
    call_command("node", "drain", "gpu1")
    assert "node gpu1 is drained" in capsys.readouterr().out
    call_command("node", "list")
    out = capsys.readouterr().out
    assert "gpu1" in out and "drained" in out and "staff" in out
    with pytest.raises(CommandError, match="No node 'ghost'"):
        call_command("node", "resume", "ghost")
    with pytest.raises(CommandError, match="Only staff"):
        call_command("node", "resume", "gpu1", "--as", "other")
    assert node_state.get("gpu1") == "draining"


def test_a_worker_on_a_node_that_takes_no_work_skips_what_it_is_handed_without_an_attempt(search, monkeypatch):
    from webapp.worker import runner

    monkeypatch.setenv("NAS_NODE", "gpu1")
    node_state.put("gpu1", "draining")
    transport.set_stopped(search.pk, False)  # Redis outlives the test database: an earlier search had this pk
    pushed = []
    monkeypatch.setattr(runner, "_push", pushed.append)
    individual = {"search": search.pk, "individual": 999_001, "number": 0}
    assert runner.evaluate_individual(individual, "task", 10) == "skipped"
    assert isinstance(pushed[0], messages.Skipped) and "node gpu1 is draining" in pushed[0].reason
    assert transport.starts(search.pk, 999_001) == 0


def test_a_loop_publishes_each_change_of_its_workers_notice(users, search):
    """The loop's ``search.workers`` events (``webapp.control.shell``) carry the notice to an open page live:
    one when every worker is drained or paused, one when a worker takes work again, none while nothing changes."""
    from webapp.control import lease
    from webapp.control.shell import LoopShell
    from webapp.searches.models import Event

    running(search)
    announce("gpu1")
    owner = lease.new_owner()
    assert lease.take(search.pk, owner)
    shell = LoopShell(search.pk, owner, send=lambda *args: None)

    def look():
        shell._idle_seen = 0.0  # at most once a second: the test does not wait for the clock
        shell.watch_workers()
        return [e.data["idle"] for e in Event.objects.filter(search=search, type="search.workers").order_by("seq")]

    assert look() == []
    node_state.put("gpu1", "paused")
    assert look() == [node_control.idle_reason("eval")] and "gpu1 (paused)" in look()[0]
    assert len(look()) == 1
    node_state.put("gpu1", "active")
    assert look()[1:] == [""]
