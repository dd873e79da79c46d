"""Re-run what failed, on the real stack (issue 34): a control worker, one-slot CPU workers, simulated evaluations
with injected failures. Every attempt is recorded (its outcome, reason and node), the strategy is told each
individual's outcome once, and every count adds up: done and failed, the attempts in the CSV, the events."""
from __future__ import annotations

import csv
import io
from collections import Counter

import pytest

from tests.engine.conftest import finished, first_keys, launched, owner, simulated_config, wait_until
from webapp.searches.models import ArchiveRow, Attempt, Event, Individual, Search
from webapp.services import exports, reruns

pytestmark = pytest.mark.integration


def failing_config(failing: int = 3, evaluations: int = 8) -> dict:
    """A search whose first ``failing`` genomes run out of memory (except on a worker started healed)."""
    config = simulated_config(evaluations=evaluations, duration=0.2, population=4)
    config["evaluation"]["faults"] = {"oom": first_keys(config, failing)}
    return config


def assert_counts_add_up(search: Search) -> list[Individual]:
    """Done plus failed is what the search counts; each individual's attempts are its rows, and the CSV's."""
    search.refresh_from_db()
    individuals = list(Individual.objects.filter(search=search).order_by("number"))
    final = [i for i in individuals if i.status in Individual.FINAL]
    assert len(final) == len(individuals) == search.evaluations_done
    assert search.stats["done"] + search.stats["failed"] == search.evaluations_done
    assert search.stats["failed"] == sum(i.status == "failed" for i in individuals)
    rows = Counter(Attempt.objects.filter(individual__search=search).values_list("individual_id", flat=True))
    assert {i.pk: i.attempts for i in individuals} == {i.pk: rows[i.pk] for i in individuals}
    out = io.StringIO()
    exports.individuals_csv(search, out)
    table = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert sum(int(row["attempts"]) for row in table) == sum(rows.values())
    return individuals


def assert_told_once(search: Search, failed_numbers: list[int]) -> None:
    """The strategy's archive holds one result per candidate; the re-run ones keep the failure it was told."""
    told = {row.data[0]: row.data[1] for row in ArchiveRow.objects.filter(search=search, kind="results")}
    indices = Counter(row.data[0] for row in ArchiveRow.objects.filter(search=search, kind="results"))
    assert set(indices.values()) == {1}
    assert all(told[n]["failure"] == "oom" for n in failed_numbers)


def test_rerun_all_failed_on_a_fixed_host_records_each_attempt_and_tells_the_strategy_once(stack):
    stack.control(wait=False)
    sick = stack.evaluator("rerun-sick")
    search = launched("rerun all", failing_config())
    search = finished(search.pk, timeout=120)
    failed = list(Individual.objects.filter(search=search, status="failed").order_by("number"))
    assert [i.number for i in failed] == [0, 1, 2] and search.status == "finished"
    assert_counts_add_up(search)
    # the host is fixed: its worker restarted healed; the spent search is re-run and extended
    sick.stop(timeout=30)
    stack.evaluator("rerun-fixed", NAS_SIM_HEALED="1")
    with pytest.raises(reruns.RerunError, match="Re-run and extend"):
        reruns.rerun(owner(), search)
    done = reruns.rerun(owner(), search, extend=True)
    assert done.numbers == [0, 1, 2] and done.extended == 3
    search = finished(search.pk, timeout=120)
    assert search.status == "finished" and search.stats["extended"] == 3 and search.stats["reruns"] == 3
    individuals = assert_counts_add_up(search)
    assert all(i.status == "done" for i in individuals) and search.stats["failed"] == 0
    for individual in individuals[:3]:
        attempts = list(Attempt.objects.filter(individual=individual).order_by("number"))
        assert [(a.outcome, a.reason, a.node, a.run) for a in attempts] == [
            ("failed", "oom", "rerun-sick", 0), ("ok", "", "rerun-fixed", 1)]
        assert individual.attempts == 2 and individual.reruns == 1
    assert_told_once(search, [0, 1, 2])
    # the page's best follows the re-runs it was not told of
    assert search.best_fitness == max(i.fitness for i in individuals)
    finishes = Counter(e.data["number"] for e in Event.objects.filter(search=search, type="individual.finished"))
    assert finishes == Counter({i.number: 2 if i.number < 3 else 1 for i in individuals})


def test_a_rerun_while_the_search_runs_is_sent_by_its_loop_and_may_fail_again(stack):
    stack.control(wait=False)
    stack.evaluator("rerun-live")
    search = launched("rerun live", failing_config(failing=2, evaluations=12))
    wait_until(lambda: Individual.objects.filter(search=search, status="failed").count() == 2, 120,
               message="two failures")
    search.refresh_from_db()
    if search.status == Search.Status.RUNNING:  # while it runs: the loop sends it with its own packets
        done = reruns.rerun(owner(), search, 0)
        assert done.status == "running" and done.extended == 0
    else:  # a slow machine finished it first: then it is extended
        reruns.rerun(owner(), search, 0, extend=True)
    wait_until(lambda: Attempt.objects.filter(individual__search=search, individual__number=0).count() == 2, 120,
               message="the re-run's attempt")
    search = finished(search.pk, timeout=120)
    individuals = assert_counts_add_up(search)
    first = individuals[0]
    assert (first.status, first.failure, first.attempts, first.reruns) == ("failed", "oom", 2, 1)
    assert [a.outcome for a in Attempt.objects.filter(individual=first).order_by("number")] == ["failed", "failed"]
    assert_told_once(search, [0, 1])
