"""A whole search across real workers: every individual final exactly once, counts and speedup reported."""
from __future__ import annotations

import subprocess

import pytest

from tests.conftest import manage
from tests.engine.conftest import (assert_each_recorded_once, finished, launched, ran_together, simulated_config,
                                   wait_until)
from webapp.searches import accounting
from webapp.services import lifecycle
from webapp.searches.models import Event, Individual, Search

pytestmark = pytest.mark.integration


def test_a_regularized_search_completes_on_two_workers(stack):
    stack.evaluator("alpha", wait=False)
    # Evaluation workers need Redis and the code only: this one's database does not exist.
    stack.evaluator("beta", DATABASE_URL="postgres://nobody:nothing@127.0.0.1:9/nowhere", NAS_USE_TEST_DB="0",
                    wait=False)
    stack.control()
    search = launched("two workers", simulated_config())
    search = finished(search.pk)
    assert search.status == Search.Status.FINISHED, search.status_reason
    individuals = list(Individual.objects.filter(search=search))
    assert sorted(i.number for i in individuals) == list(range(30))
    assert all(i.status == Individual.Status.DONE for i in individuals)
    assert len({i.key for i in individuals}) == 30
    summary = accounting.summary(search.stats)
    counts = {node["node"]: node["count"] for node in summary["nodes"]}
    assert sum(counts.values()) == 30 and set(counts) == {"alpha", "beta"}
    assert min(counts.values()) >= 8  # both pulled work
    # Both ran at once (what a speedup above 1 comes from), however loaded the machine: how much above 1 is for
    # benchmarks/, not a test.
    assert ran_together(individuals, "alpha", "beta")
    assert summary["ideal"] == 2 and 0 < summary["speedup"] <= 2.05
    assert 0 < summary["efficiency"] <= 1.03
    assert search.best_fitness == max(i.fitness for i in individuals)
    seqs = list(Event.objects.filter(search=search).values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
    assert Event.objects.filter(search=search, type="individual.finished").count() == 30
    print(f"speedup {summary['speedup']:.2f} of ideal {summary['ideal']}, efficiency {summary['efficiency']:.2f}, "
          f"wall {summary['wall']:.1f} s, serial {summary['serial']:.1f} s, counts {counts}")


def test_an_evaluation_worker_on_a_missing_device_refuses_to_start(stack):
    run = subprocess.run(manage("evalworker", "--device", "cuda:7"), env=stack.env(), capture_output=True,
                         text=True, timeout=120)
    assert run.returncode != 0
    assert "--device cuda:7" in run.stderr and "use --device cpu" in run.stderr


def test_a_stopped_search_keeps_its_work_and_resumes_to_the_same_end(stack):
    stack.evaluator("alpha", slots=2, wait=False)
    stack.control()
    search = launched("stop and resume", simulated_config(evaluations=20, duration=0.4))
    wait_until(lambda: Individual.objects.filter(search=search, status=Individual.Status.DONE).count() >= 5, 60)
    lifecycle.stop(Search.objects.get(pk=search.pk))
    stopped = finished_or_stopped(search.pk)
    assert stopped.status == Search.Status.STOPPED and stopped.status_reason == "stopped by its owner"
    done_then = stopped.evaluations_done
    assert 5 <= done_then < 20
    with pytest.raises(lifecycle.ActionError, match="Only a running search can be stopped"):
        lifecycle.stop(stopped)
    lifecycle.resume(stopped)
    search = finished(search.pk)
    assert search.status == Search.Status.FINISHED, search.status_reason
    individuals = assert_each_recorded_once(search, 20)
    assert all(i.status == Individual.Status.DONE for i in individuals)
    statuses = list(Event.objects.filter(search=search, type="search.status").values_list("data__status", flat=True))
    assert statuses == ["running", "stopping", "stopped", "running", "finished"]


def finished_or_stopped(search_id: int) -> Search:
    def ended():
        search = Search.objects.get(pk=search_id)
        return search if search.status in (Search.Status.STOPPED, Search.Status.FINISHED) else None

    return wait_until(ended, 30, message="search stopped")


def test_a_stop_records_what_finishes_after_it_and_shows_the_queue_as_not_sent(stack):
    """After Stop, the evaluation under way still finishes and is recorded (the search says stopping until it
    has), nothing is left shown running, queued work is shown as not sent, and a resume sends it."""
    from tests.engine.conftest import running_evaluation
    from webapp.services import queries

    stack.evaluator("alpha", wait=False)
    stack.control()
    search = launched("stop drains", simulated_config(evaluations=6, duration=1.5, population=4))
    running, _ = running_evaluation(search.pk)
    lifecycle.stop(Search.objects.get(pk=search.pk))
    stopped = finished_or_stopped(search.pk)
    assert stopped.status == Search.Status.STOPPED
    assert Individual.objects.get(pk=running).status == Individual.Status.DONE  # recorded after the stop
    assert not Individual.objects.filter(search=search, status=Individual.Status.RUNNING).exists()
    states = {row["number"]: row["state"] for row in queries.individuals_page(stopped, {}).rows}
    assert "not sent" in states.values() and set(states.values()) <= {"done", "not sent"}, states
    lifecycle.resume(stopped)
    search = finished(search.pk)
    assert search.status == Search.Status.FINISHED, search.status_reason
    assert_each_recorded_once(search, 6)
    assert search.evaluations_total == search.evaluations_done == 6


def test_a_generational_search_that_reuses_results_ends_at_100_percent(stack):
    """Children equal to evaluated genomes reuse their results: the total follows what will really be evaluated
    (it shrank from generations x population) and a finished search shows done = total, 100%."""
    from webapp.services import queries

    stack.evaluator("alpha", slots=2, wait=False)
    stack.control()
    config = {"space": {"name": "chain", "max_layers": 1, "modules": 1},  # 18 genomes: copies are certain
              "strategy": {"name": "generational", "seed": 2,
                           "params": {"population": 8, "generations": 4, "p_mutation": 0.3}},
              "evaluation": {"mode": "simulated", "duration": 0.05}}
    search = launched("generational reuse", config)
    assert search.evaluations_total == 32
    search = finished(search.pk)
    assert search.status == Search.Status.FINISHED, search.status_reason
    row = queries.search_row(search)
    assert search.evaluations_done < 32  # some children reused results
    assert row["done"] == row["total"] == search.evaluations_done and row["progress"] == 100.0
    assert_each_recorded_once(search, search.evaluations_done)
