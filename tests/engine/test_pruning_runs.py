"""Early stopping across real processes: Redis, a control worker and evaluation workers, simulated curves and
real PyTorch training on digits. Pruned candidates end early, each individual is final exactly once, and a
worker killed during a pruned evaluation loses nothing."""
from __future__ import annotations

import pytest

from tests.engine.conftest import (
    assert_each_recorded_once, finished, launched, running_evaluation, wait_until,
)
from webapp.searches.pruning_stats import saved_epochs
from webapp.messaging import transport
from webapp.searches.models import Individual, Search

pytestmark = pytest.mark.integration


def simulated(evaluations: int, duration: float, pruner: dict, epochs: int = 10) -> dict:
    return {"space": {"name": "chain", "max_layers": 6},
            "strategy": {"name": "random", "seed": 2, "params": {"max_evaluations": evaluations}},
            "training": {"epochs": epochs}, "pruner": pruner,
            "evaluation": {"mode": "simulated", "duration": duration, "curves": "realistic"}}


def check_counts(search: Search, count: int, epochs: float) -> tuple[list[Individual], list[Individual]]:
    individuals = assert_each_recorded_once(search, count)
    pruned = [i for i in individuals if i.status == Individual.Status.PRUNED]
    done = [i for i in individuals if i.status == Individual.Status.DONE]
    assert len(pruned) + len(done) == count == search.evaluations_done
    assert all(i.epochs_trained < epochs and i.prune.get("stop") for i in pruned)
    savings = saved_epochs(search.stats)
    assert savings["pruned"] == len(pruned) and savings["budget"] == pytest.approx(count * epochs)
    assert savings["trained"] == pytest.approx(sum(i.epochs_trained for i in individuals))
    return pruned, done


def test_curve_pruning_across_two_evaluation_workers(stack):
    stack.evaluator("alpha", slots=2, wait=False)
    stack.evaluator("beta", slots=2, wait=False)
    stack.control()
    pruner = {"name": "curve", "k": 3, "min_steps": 2, "threshold": 0.25}
    # 0.2 s an epoch: a stop the loop sends reaches the worker within the candidate's training even on a loaded
    # machine (at 0.06 s an epoch, a run beside another test stage saw every candidate end before its stop came)
    search = finished(launched("curve pruning", simulated(30, 2.0, pruner)).pk, timeout=240)
    assert search.status == Search.Status.FINISHED, search.status_reason
    pruned, done = check_counts(search, 30, 10)
    decided = [i for i in pruned + done if (i.prune or {}).get("stop")]
    assert decided, "the curve pruner decided to stop nothing"
    assert pruned, f"curve pruning stopped nothing (it asked to stop {sorted(i.number for i in decided)})"
    assert {i.node for i in pruned + done} == {"alpha", "beta"}
    print(f"pruned {len(pruned)} of 30; {saved_epochs(search.stats)}")


def test_a_worker_killed_during_a_pruned_evaluation_loses_nothing(stack):
    alpha = stack.evaluator("alpha", wait=False)
    stack.control()
    search = launched("kill while pruning", simulated(4, 6.0, {"name": "none"}))
    individual_id, beat = running_evaluation(search.pk)
    wait_until(lambda: len(Individual.objects.get(pk=individual_id).curve) >= 1, 30, message="a first report")
    transport.request_prune(search.pk, individual_id)  # as the loop's pruner would ...
    stack.kill(stack.holding(beat["pid"]))  # ... and the worker dies before it can obey
    stack.evaluator("beta")
    search = finished(search.pk, timeout=120)
    assert search.status == Search.Status.FINISHED, search.status_reason
    individuals = assert_each_recorded_once(search, 4)
    victim = Individual.objects.get(pk=individual_id)
    assert victim.status in (Individual.Status.PRUNED, Individual.Status.DONE)
    if victim.status == Individual.Status.PRUNED:  # the new attempt obeyed the stop at its first report
        assert victim.node == "beta" and victim.epochs_trained < 10 and victim.attempts >= 2
    assert all(i.status == Individual.Status.DONE for i in individuals if i.pk != individual_id)
    assert alpha.process.poll() is not None


#: Real trainings in the curve-pruned search (each costs a few seconds of a CI run).
REAL_CANDIDATES = 8


def test_real_digits_training_with_curve_pruning(stack):
    stack.evaluator("alpha", OMP_NUM_THREADS="1", wait=False)
    stack.evaluator("beta", OMP_NUM_THREADS="1", wait=False)
    stack.control()
    config = {"space": {"name": "chain", "max_layers": 2, "modules": 2},
              "strategy": {"name": "random", "seed": 1, "params": {"max_evaluations": REAL_CANDIDATES}},
              "dataset": "digits",
              "training": {"epochs": 4, "batch_size": 64, "learning_rate": 0.0005},
              "pruner": {"name": "curve", "k": 2, "min_steps": 1, "min_points": 4, "threshold": 0.25},
              "evaluation": {"mode": "train", "keep_weights": 0, "report_every": 5}}
    search = finished(launched("digits pruned", config).pk, timeout=400)
    assert search.status == Search.Status.FINISHED, search.status_reason
    pruned, done = check_counts(search, REAL_CANDIDATES, 4)
    assert pruned, "curve pruning stopped no real training"
    for individual in pruned:
        assert individual.curve[-1]["step"] % 5 == 0 and individual.metrics["steps"] == individual.curve[-1]["step"]
    print(f"digits: pruned {sorted(i.number for i in pruned)} of {REAL_CANDIDATES}; {saved_epochs(search.stats)}; "
          f"best {search.best_fitness:.3f}")
