"""A whole search across real workers: every individual final exactly once, counts and speedup reported."""
from __future__ import annotations

import subprocess

import pytest

from tests.conftest import manage

from tests.engine.conftest import finished, launched, simulated_config
from webapp.searches import accounting
from webapp.searches.models import Event, Individual, Search

pytestmark = pytest.mark.integration


def test_a_regularized_search_completes_on_two_workers(stack):
    stack.evaluator("alpha")
    # Evaluation workers need Redis and the code only: this one's database does not exist.
    stack.evaluator("beta", DATABASE_URL="postgres://nobody:nothing@127.0.0.1:9/nowhere", NAS_USE_TEST_DB="0")
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
    assert summary["ideal"] == 2 and 1.0 < summary["speedup"] <= 2.05
    assert 0.5 < summary["efficiency"] <= 1.03
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
