"""The snapshot's points and the table's rows are read as plain rows (no model instances, only the metrics they
show): they must equal what the model instances give through ``broadcast.individual_event``."""
from __future__ import annotations

from webapp.searches.broadcast import individual_event
from webapp.searches.models import Individual
from webapp.services import queries


def model_row(individual: Individual, search_status: str = "running") -> dict:
    """A table row as it was built from a model instance."""
    metrics = individual.metrics or {}
    state = individual.status
    if state == "queued" and (search_status in queries.PAUSED or individual.dispatched is None):
        state = "not sent"
    return {**individual_event(individual), "state": state, "accuracy": metrics.get("accuracy"), "flops": metrics.get("flops"),
            "latency_ms": metrics.get("latency_ms"), "parents": individual.parents, "message": individual.message}


def test_final_and_running_points_equal_the_events_of_the_models(search):
    Individual.objects.filter(search=search, number=9).update(status="running", finished=None, metrics={})
    finals = Individual.objects.filter(search=search, status__in=Individual.FINAL).order_by("finished", "number")
    assert queries.final_points(search) == [individual_event(i) for i in finals]
    assert len(queries.final_points(search)) == 9
    running = Individual.objects.get(search=search, number=9)
    assert queries.running_points(search) == [individual_event(running)]
    assert queries.running_points(search)[0]["params"] is None  # no metrics yet


def test_table_rows_equal_the_rows_of_the_models(search):
    Individual.objects.filter(search=search, number=2).update(message="x" * 300,
                                                              metrics={"accuracy": 0.5, "latency_ms": 1.5})
    for params in ({}, {"sort": "-fitness", "per_page": 4, "page": 2}, {"status": "failed"}, {"node": "beta"}):
        page = queries.individuals_page(search, params)
        numbers = [row["number"] for row in page.rows]
        models = {i.number: i for i in Individual.objects.filter(search=search, number__in=numbers)}
        assert page.rows == [model_row(models[n], search.status) for n in numbers], params
        assert page.rows
    row = queries.individuals_page(search, {"q": ""}).rows[2]
    assert row["latency_ms"] == 1.5 and row["flops"] is None and len(row["message"]) == 300  # whole (issue 36)


def test_the_node_filter_offers_every_node_that_evaluated(search):
    assert queries.nodes_of(search) == ["alpha", "beta"]
    Individual.objects.filter(search=search, number=9).update(status="running", node="gamma")
    assert queries.nodes_of(search) == ["alpha", "beta", "gamma"]


def test_queued_work_no_worker_will_run_reads_not_sent(search):
    """Issue 36, item 10: in a running search (just after a resume too) queued work its loop is about to send
    reads ``queued``; only a paused search's queue is ``not sent``."""
    from django.utils import timezone

    Individual.objects.filter(search=search, number=8).update(status="queued", dispatched=timezone.now(), attempts=0)
    Individual.objects.filter(search=search, number=9).update(status="queued", dispatched=None, attempts=0)
    search.status = "running"
    search.save(update_fields=["status"])
    states = {row["number"]: row["state"] for row in queries.individuals_page(search, {"status": "queued"}).rows}
    assert states == {8: "queued", 9: "queued"}
    Individual.objects.filter(search=search, number=8).update(attempts=1)  # its first attempt died with its worker
    states = {row["number"]: row["state"] for row in queries.individuals_page(search, {"status": "queued"}).rows}
    assert states == {8: "lost, retrying (attempt 2)", 9: "queued"}
    search.status = "stopped"
    search.save(update_fields=["status"])
    states = {row["number"]: row["state"] for row in queries.individuals_page(search, {"status": "queued"}).rows}
    assert states == {8: "not sent", 9: "not sent"}
