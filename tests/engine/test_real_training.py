"""A real search: PyTorch trains every architecture on the digits data in two CPU evaluation workers."""
from __future__ import annotations

import pytest

from tests.engine.conftest import assert_each_recorded_once, finished, launched
from webapp.searches import accounting
from webapp.searches.models import Individual, Search

pytestmark = pytest.mark.integration

CONFIG = {
    "space": {"name": "chain", "max_layers": 3},
    "strategy": {"name": "regularized", "seed": 3,
                 "params": {"population": 8, "sample_size": 3, "max_evaluations": 30}},
    "dataset": "digits",
    "training": {"epochs": 2, "batch_size": 64, "learning_rate": 0.003},
    "evaluation": {"mode": "train"},
}


def test_a_regularized_search_trains_30_networks_on_two_cpu_workers(stack):
    stack.evaluator("alpha", OMP_NUM_THREADS="1")
    stack.evaluator("beta", OMP_NUM_THREADS="1")
    stack.control()
    search = finished(launched("digits on two workers", CONFIG).pk, timeout=240)
    assert search.status == Search.Status.FINISHED, search.status_reason
    individuals = assert_each_recorded_once(search, 30)
    assert all(i.status == Individual.Status.DONE for i in individuals), [i.message for i in individuals]
    accuracies = [i.fitness for i in individuals]
    assert max(accuracies) > 0.8  # ten classes: chance is 0.1
    best = Individual.objects.get(pk=search.best[0])
    assert best.fitness == max(accuracies) == search.best_fitness
    assert best.metrics["params"] > 0 and best.metrics["flops"] > 0 and len(best.curve) == 2
    summary = accounting.summary(search.stats)
    counts = {node["node"]: node["count"] for node in summary["nodes"]}
    assert sum(counts.values()) == 30 and min(counts.values()) >= 8, counts
    assert summary["ideal"] == 2 and summary["speedup"] > 1.2
    print(f"real digits search: speedup {summary['speedup']:.2f} of ideal 2, efficiency {summary['efficiency']:.2f}, "
          f"wall {summary['wall']:.1f} s, serial {summary['serial']:.1f} s, counts {counts}, "
          f"best accuracy {search.best_fitness:.3f}")
