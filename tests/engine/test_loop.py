"""The control loop without Celery: it is given how to send a packet, so a test can hand each packet straight to
the worker's code in this process and run a whole search (a real Redis and database, no worker process)."""
from __future__ import annotations

import time

import pytest

from tests.engine.conftest import assert_each_recorded_once, owner
from webapp.control import lease, recording
from webapp.control.loop import SearchLoop
from webapp.messaging import signing
from webapp.searches.models import Individual, Search
from webapp.services import lifecycle
from webapp.worker import runner

pytestmark = pytest.mark.integration

CONFIG = {"space": {"name": "chain", "max_layers": 3},
          "strategy": {"name": "regularized", "seed": 4, "params": {"population": 4, "sample_size": 2,
                                                                    "max_evaluations": 10}},
          "evaluation": {"mode": "simulated", "duration": 0.0}}


def test_a_whole_search_runs_with_a_send_that_evaluates_in_place(engine, monkeypatch):
    monkeypatch.setattr(lifecycle.dispatch, "start_loop", lambda search_id: None)  # this test runs the loop itself
    search = lifecycle.launch(lifecycle.create_search(owner(), "no celery", CONFIG))
    sent: list[tuple[str, int]] = []

    def send(packet: dict, signature: str, task_id: str, queue: str, first: bool = False) -> None:
        signing.parse(packet, signature)  # what the loop sends is a valid signed packet ...
        sent.append((queue, packet["ind_len"]))
        runner.evaluate_packet(packet, signature, task_id)  # ... which the worker's code evaluates here

    owner_id = lease.new_owner()
    assert lease.take(search.pk, owner_id)
    assert SearchLoop(search.pk, owner_id, send=send).run() == Search.Status.FINISHED
    search.refresh_from_db()
    individuals = assert_each_recorded_once(search, 10)
    assert all(i.status == Individual.Status.DONE for i in individuals)
    assert {queue for queue, _ in sent} == {"eval"} and sum(size for _, size in sent) == 10
    assert search.stats["packets"] == len(sent) and search.evaluations_total == search.evaluations_done == 10


def test_a_search_whose_every_evaluation_failed_ends_failed_with_the_reason(engine, monkeypatch):
    """Issue 36, item 5: not one success is no ``finished``: the search says it failed, and why, on the list,
    the page and the API (they all read ``status`` and ``status_reason``)."""
    import evaluators.simulated
    from evaluators.result import EvaluationResult
    from webapp.services import queries

    monkeypatch.setattr(lifecycle.dispatch, "start_loop", lambda search_id: None)
    monkeypatch.setattr(evaluators.simulated, "simulate", lambda key, *args, **kwargs: EvaluationResult.failed(
        "DatasetMissing", "no data", timings={"total": 0.01}, device="simulated"))
    search = lifecycle.launch(lifecycle.create_search(owner(), "all fail", CONFIG))

    def send(packet: dict, signature: str, task_id: str, queue: str, first: bool = False) -> None:
        runner.evaluate_packet(packet, signature, task_id)

    owner_id = lease.new_owner()
    assert lease.take(search.pk, owner_id)
    assert SearchLoop(search.pk, owner_id, send=send).run() == Search.Status.FAILED
    search.refresh_from_db()
    assert search.status == Search.Status.FAILED and search.finished is not None
    assert search.status_reason == "all 10 evaluations failed: DatasetMissing"
    assert queries.search_row(search)["status_reason"] == search.status_reason
    summary = queries.search_detail(search)["summary"]
    assert summary["failed"] == 10 and summary["speedup"] is not None and 0 <= summary["efficiency"] <= 1


def test_a_search_stopped_before_its_first_result_says_its_speedup_waits(engine, monkeypatch):
    """Issue 36, item 1: stopped before any result, its figures wait instead of ``0.00 of 5209334850.3``."""
    from webapp.services import queries
    from webapp.services.progress_line import progress_line

    monkeypatch.setattr(lifecycle.dispatch, "start_loop", lambda search_id: None)
    search = lifecycle.launch(lifecycle.create_search(owner(), "stopped early", CONFIG))

    def send(packet: dict, signature: str, task_id: str, queue: str, first: bool = False) -> None:
        lifecycle.stop(Search.objects.get(pk=search.pk))  # stopped while its first packet is on its way

    owner_id = lease.new_owner()
    assert lease.take(search.pk, owner_id)
    assert SearchLoop(search.pk, owner_id, send=send).run() == Search.Status.STOPPED
    search.refresh_from_db()
    summary = queries.search_detail(search)["summary"]
    assert summary["done"] + summary["failed"] == 0 and 0 < summary["wall"] < 600
    assert summary["speedup"] is summary["held"] is summary["efficiency"] is None
    assert "speedup waits for the first result" in progress_line(search.status, 0, 10, None, summary)
def test_a_stop_with_nothing_running_ends_stopped_without_waiting(engine, monkeypatch):
    """Issue 36, item 10: stopped while nothing runs (its work still queued), the loop ends ``stopped`` at its
    next look, without waiting for results no worker will send."""
    monkeypatch.setattr(lifecycle.dispatch, "start_loop", lambda search_id: None)
    search = lifecycle.launch(lifecycle.create_search(owner(), "stop early", CONFIG))
    owner_id = lease.new_owner()
    assert lease.take(search.pk, owner_id)
    loop = SearchLoop(search.pk, owner_id, send=lambda *packet: None)  # sent, never started by any worker
    with recording.fenced(search.pk, owner_id) as fenced:
        recording.start_accounting(fenced, time.time())
    loop.begin()
    loop.step()
    assert lifecycle.stop(search).status == Search.Status.STOPPING  # its loop is alive: it ends the search
    waits: list[float] = []
    take = lifecycle.transport.take_messages

    def recorded(search_id, wait, *args, **kwargs):
        waits.append(wait)
        return take(search_id, wait, *args, **kwargs)

    monkeypatch.setattr("webapp.messaging.transport.take_messages", recorded)
    assert loop.run() == Search.Status.STOPPED
    assert waits == [0]
    search.refresh_from_db()
    assert search.status == Search.Status.STOPPED and Individual.objects.filter(search=search).exists()
