"""A real search: PyTorch trains every architecture on the digits data in two CPU evaluation workers, and the
trained weights of the best three are kept."""
from __future__ import annotations

import io

import pytest

from tests.engine.conftest import assert_each_recorded_once, finished, launched, ran_together
from webapp.searches import accounting, ranking
from webapp.messaging import transport
from webapp.searches.models import Individual, Search, Weights

pytestmark = pytest.mark.integration

#: Real trainings in the search: 8 random, then 8 evolved (its CI time grows with each).
EVALUATIONS = 16
CONFIG = {
    "space": {"name": "chain", "max_layers": 3},
    "strategy": {"name": "regularized", "seed": 3,
                 "params": {"population": 8, "sample_size": 3, "max_evaluations": EVALUATIONS}},
    "dataset": "digits",
    "training": {"epochs": 2, "batch_size": 64, "learning_rate": 0.003},
    "evaluation": {"mode": "train", "keep_weights": 3},
}


def test_a_regularized_search_trains_16_networks_on_two_cpu_workers(stack):
    from evaluators.blocks import Net
    from evaluators.builders import architecture, as_space
    from evaluators.model_files import load_weights

    stack.evaluator("alpha", OMP_NUM_THREADS="1", wait=False)
    stack.evaluator("beta", OMP_NUM_THREADS="1", wait=False)
    stack.control()
    search = finished(launched("digits on two workers", CONFIG).pk, timeout=240)
    assert search.status == Search.Status.FINISHED, search.status_reason
    individuals = assert_each_recorded_once(search, EVALUATIONS)
    assert all(i.status == Individual.Status.DONE for i in individuals), [i.message for i in individuals]
    accuracies = [i.fitness for i in individuals]
    assert max(accuracies) > 0.8  # ten classes: chance is 0.1
    best = Individual.objects.get(pk=search.best[0])
    assert best.fitness == max(accuracies) == search.best_fitness
    assert best.metrics["params"] > 0 and best.metrics["flops"] > 0 and len(best.curve) == 2
    # The trained weights of the three best (by fitness, as the downloads rank them) are kept, no others,
    # and none is left waiting in Redis.
    top3 = ranking.best_individuals(search, 3)
    assert set(Weights.objects.filter(individual__search=search).values_list("individual_id", flat=True)) == {
        i.pk for i in top3}
    assert not list(transport.client().scan_iter(match=f"nas:kept:{search.pk}:*"))
    state = load_weights(io.BytesIO(bytes(Weights.objects.get(individual=top3[0]).data)))
    Net(architecture(top3[0].genome, as_space(search.config["space"]), "digits")).load_state_dict(state)
    summary = accounting.summary(search.stats)
    counts = {node["node"]: node["count"] for node in summary["nodes"]}
    assert sum(counts.values()) == EVALUATIONS and min(counts.values()) >= 4, counts
    assert ran_together(Individual.objects.filter(search=search), "alpha", "beta")  # in parallel, whatever the load
    assert summary["ideal"] == 2 and 0 < summary["speedup"] <= 2.05
    print(f"real digits search: speedup {summary['speedup']:.2f} of ideal 2, efficiency {summary['efficiency']:.2f}, "
          f"wall {summary['wall']:.1f} s, serial {summary['serial']:.1f} s, counts {counts}, "
          f"best accuracy {search.best_fitness:.3f}")
