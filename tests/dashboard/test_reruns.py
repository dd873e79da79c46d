"""Re-run failed individuals (issue 34): what the service changes, its refusals (each a 4xx with a message, and
nothing changed), the API, the page's buttons, the CLI, and the attempts the loop's recording writes."""
from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from webapp.messaging import transport
from webapp.searches.models import Attempt, Event, Individual, Search
from webapp.services import lifecycle, queries, reruns

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_loop(monkeypatch):
    """Actions queue no real loop here; the loops started are counted."""
    started = []
    monkeypatch.setattr(lifecycle.dispatch, "start_loop", started.append)
    return started


def state(search: Search) -> tuple:
    """Everything a re-run may change, to compare before and after a refusal."""
    search.refresh_from_db()
    rows = tuple(Individual.objects.filter(search=search).order_by("number").values_list(
        "status", "attempts", "reruns", "attempt_base", "failure", "dispatched"))
    return (search.status, search.evaluations_done, json.dumps(search.stats, sort_keys=True), search.event_seq, rows)


def api(client, search: Search, body: dict | str):
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(reverse("api-rerun", args=[search.pk]), data, content_type="application/json")


def test_the_loop_records_one_attempt_per_result_with_its_outcome_and_node(search):
    rows = Attempt.objects.filter(individual__search=search)
    assert rows.count() == sum(Individual.objects.filter(search=search).values_list("attempts", flat=True)) == 10
    failed = rows.get(individual__number=3)
    assert (failed.outcome, failed.reason, failed.message, failed.node) == ("failed", "oom", "simulated out of memory",
                                                                          "beta")
    assert set(rows.exclude(individual__number=3).values_list("outcome", flat=True)) == {"ok"}


def test_a_rerun_queues_the_failed_individual_again_and_the_counts_follow(search):
    transport.mark_done(search.pk, search.individuals.get(number=3).pk)
    done = reruns.rerun(search.owner, search, 3)
    assert (done.numbers, done.status, done.extended) == ([3], "running", 0)
    individual = search.individuals.get(number=3)
    assert (individual.status, individual.dispatched, individual.failure) == ("queued", None, "")
    assert (individual.reruns, individual.attempt_base, individual.attempts) == (1, 1, 1)
    assert not transport.is_done(search.pk, individual.pk)  # a worker runs it as new
    search.refresh_from_db()
    assert search.evaluations_done == 9 and search.stats["failed"] == 0 and search.stats["reruns"] == 1
    assert search.stats["done"] + search.stats["failed"] == search.evaluations_done
    assert Event.objects.filter(search=search, type="individual.rerun").count() == 1
    # its attempt keeps the failure; the table says what it waits for
    assert Attempt.objects.get(individual=individual).outcome == "failed"
    rows = {row["number"]: row["state"] for row in queries.individuals_page(search, {}).rows}
    assert rows[3] == "re-run queued (attempt 2)"


@pytest.mark.parametrize("number, status, text", [
    (3, 409, "only a failed individual"),  # running (made so below)
    (4, 409, "succeeded"),
    (99, 404, "no individual #99"),
])
def test_a_rerun_of_an_individual_that_did_not_fail_is_refused_and_changes_nothing(search, number, status, text):
    search.individuals.filter(number=3).update(status=Individual.Status.RUNNING)
    before = state(search)
    with pytest.raises(reruns.RerunError, match=text) as refused:
        reruns.rerun(search.owner, search, number)
    assert refused.value.status == status and state(search) == before


def test_a_finished_search_asks_for_extend_and_says_what_it_changes(search, no_loop,
                                                                   django_capture_on_commit_callbacks):
    Search.objects.filter(pk=search.pk).update(status=Search.Status.FINISHED, evaluations_total=10)
    search.refresh_from_db()
    before = state(search)
    with pytest.raises(reruns.RerunError, match="Re-run and extend reopens it") as refused:
        reruns.rerun(search.owner, search)
    assert refused.value.status == 409 and "11 in all" in str(refused.value) and state(search) == before
    with django_capture_on_commit_callbacks(execute=True):
        done = reruns.rerun(search.owner, search, extend=True)
    search.refresh_from_db()
    assert (done.status, done.extended, search.status, search.finished) == ("running", 1, "running", None)
    assert search.stats["extended"] == 1 and no_loop == [search.pk]  # its loop restarts to run it


def test_draft_stopping_and_no_failure_are_refused(search, users):
    search.individuals.filter(number=3).update(status=Individual.Status.DONE)
    with pytest.raises(reruns.RerunError, match="no failed individual") as refused:
        reruns.rerun(search.owner, search)
    assert refused.value.status == 409
    Search.objects.filter(pk=search.pk).update(status=Search.Status.STOPPING)
    search.refresh_from_db()
    with pytest.raises(reruns.RerunError, match="wait until it has stopped"):
        reruns.rerun(search.owner, search)
    draft = lifecycle.create_search(users["owner"], "draft", search.config)
    with pytest.raises(reruns.RerunError, match="launch it first"):
        reruns.rerun(users["owner"], draft)


def test_the_api_reruns_and_refuses_with_json_messages(search, client, users):
    client.force_login(users["other"])
    assert api(client, search, {}).status_code == 404  # another's search does not exist for them
    client.force_login(users["staff"])
    before = state(search)
    response = api(client, search, {"individual": 3})
    assert response.status_code == 403 and "Only its owner (owner)" in response.json()["error"]
    client.force_login(users["owner"])
    for body, field in (({"individual": "three"}, "individual"), ({"individual": True}, "individual"),
                        ({"extend": "yes"}, "extend"), ({"number": 3}, "number")):
        response = api(client, search, body)
        assert response.status_code == 400 and response.json()["field"] == field, body
    assert api(client, search, "[1]").status_code == 400 and api(client, search, "{").status_code == 400
    response = api(client, search, {"individual": 4})
    assert response.status_code == 409 and "succeeded" in response.json()["error"]
    assert state(search) == before
    response = api(client, search, {"individual": 3})
    assert response.status_code == 200 and response.json()["numbers"] == [3]


def test_the_pages_offer_the_button_on_a_failed_individual_only(search, owner_client):
    page = owner_client.get(reverse("individual-detail", args=[search.pk, 3])).content.decode()
    assert 'id="rerun-button"' in page and 'id="attempt-1"' in page and "simulated out of memory" in page
    assert 'id="rerun-button"' not in owner_client.get(reverse("individual-detail", args=[search.pk, 4])).content.decode()
    assert "Re-run failed (1)" in owner_client.get(reverse("search-detail", args=[search.pk])).content.decode()
    response = owner_client.post(reverse("search-rerun", args=[search.pk]), {"individual": "3"})
    assert response.status_code == 302 and search.individuals.get(number=3).status == "queued"
    response = owner_client.post(reverse("search-rerun", args=[search.pk]), {"individual": "3"})
    assert response.status_code == 409 and b"only a failed individual" in response.content
    assert owner_client.post(reverse("search-rerun", args=[search.pk]), {"individual": "x"}).status_code == 400


def test_the_command_reruns_and_explains_a_refusal(search, capsys):
    with pytest.raises(CommandError, match="succeeded"):
        call_command("search", "rerun", str(search.pk), "--individual", "4")
    call_command("search", "rerun", str(search.pk))
    assert "Re-run of 1 individual of search" in capsys.readouterr().out
    assert search.individuals.get(number=3).status == "queued"


def test_a_late_result_fills_the_row_of_its_lost_attempt_and_leaves_the_individual(search):
    from webapp.control import recording
    from webapp.messaging import messages

    individual = search.individuals.get(number=5)
    Attempt.objects.filter(individual=individual).update(outcome="lost", reason="worker_lost")
    Individual.objects.filter(pk=individual.pk).update(attempts=2)
    individual.refresh_from_db()

    def late(attempt: int) -> messages.Result:
        return messages.parse({
            "type": "result", "search": search.pk, "individual": individual.pk, "number": 5, "task_id": "t",
            "node": "slow", "device": "cpu", "slot": "slow/cpu/0", "attempt": attempt, "started": 1.0,
            "finished": 2.0, "duration": 1.0, "packet_bytes": 0,
            "result": {"status": "failed", "failure": "oom", "message": "RuntimeError: CUDA out of memory"}})

    before = (individual.status, individual.fitness, individual.node)
    assert recording.record_result(search, individual, late(1), nbytes=10) is None
    row = Attempt.objects.get(individual=individual, number=1)
    assert (row.outcome, row.reason, row.kind, row.node) == ("failed", "oom", "RuntimeError", "slow")
    assert recording.record_result(search, individual, late(3), nbytes=10) is None  # never started: no row
    individual.refresh_from_db()
    assert (individual.status, individual.fitness, individual.node) == before
    assert Attempt.objects.filter(individual=individual).count() == 1


def test_a_stopped_search_keeps_its_rerun_until_it_is_resumed(search, no_loop):
    Search.objects.filter(pk=search.pk).update(status=Search.Status.STOPPED)
    search.refresh_from_db()
    done = reruns.rerun(search.owner, search, 3)
    assert done.status == "stopped" and "run when the search is resumed" in done.message and no_loop == []
    rows = {row["number"]: row["state"] for row in queries.individuals_page(search, {}).rows}
    assert rows[3] == "not sent"  # the resume's loop sends it (SearchLoop.begin)
