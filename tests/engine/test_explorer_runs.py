"""The explorers on the real stack (control worker, evaluation workers, Redis, simulated evaluations): a reinforce
search runs to its end keeping its policy's beliefs; a tpe search stopped midway and resumed (its study rebuilt
from the stored archive by a new loop) ends with every individual recorded once and no genome twice."""
from __future__ import annotations

import pytest

from tests.engine.conftest import assert_each_recorded_once, finished, launched, simulated_config, wait_until
from tests.engine.test_search_runs import finished_or_stopped
from webapp.searches import beliefs
from webapp.searches.models import ArchiveRow, Individual, Search
from webapp.services import lifecycle

pytestmark = pytest.mark.integration


def explorer_config(name: str, evaluations: int, **params) -> dict:
    return {**simulated_config(evaluations=evaluations, duration=0.3), "space": {"name": "chain", "max_layers": 4},
            "strategy": {"name": name, "seed": 5, "params": {"max_evaluations": evaluations, **params}}}


def test_a_reinforce_search_completes_and_keeps_its_policy(stack):
    stack.evaluator("alpha", slots=2, wait=False)
    stack.control()
    search = finished(launched("reinforce", explorer_config("reinforce", 20)).pk, timeout=120)
    assert search.status == Search.Status.FINISHED, search.status_reason
    individuals = assert_each_recorded_once(search, 20)
    assert len({i.key for i in individuals}) == 20 and {i.operator for i in individuals} == {"sample"}
    kept = beliefs.kept_for(search.pk)
    assert kept["latest"]["kind"] == "policy" and kept["latest"]["told"] == 20
    assert kept["history"][-1]["told"] == 20 and len(kept["history"]) >= 2
    assert search.strategy_state["strategy"]["updates"] == sum(i.fitness is not None for i in individuals)


def test_a_tpe_search_stopped_and_resumed_ends_with_each_genome_once(stack):
    stack.evaluator("alpha", slots=2, wait=False)
    stack.control()
    search = launched("tpe", explorer_config("tpe", 24, startup_trials=4))
    wait_until(lambda: Individual.objects.filter(search=search, status=Individual.Status.DONE).count() >= 8, 90)
    lifecycle.stop(Search.objects.get(pk=search.pk))
    stopped = finished_or_stopped(search.pk)
    assert stopped.status == Search.Status.STOPPED and stopped.evaluations_done < 24
    lifecycle.resume(stopped)
    search = finished(search.pk, timeout=120)
    assert search.status == Search.Status.FINISHED, search.status_reason
    individuals = assert_each_recorded_once(search, 24)
    assert len({i.key for i in individuals}) == 24
    rows = ArchiveRow.objects.filter(search=search)
    assert rows.filter(kind="candidates").count() == rows.filter(kind="results").count() == 24
    latest = beliefs.kept_for(search.pk)["latest"]
    assert latest["kind"] == "densities" and latest["modelled"] and latest["told"] == 24
