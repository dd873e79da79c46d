"""Early stopping in the control loop, without Celery: the loop's ``send`` hands each packet to the worker's code
in a thread of this process (a real Redis and database), so progress messages arrive while evaluations run and
the loop's pruner stops some of them mid-training."""
from __future__ import annotations

import json
import threading

import pytest

from nas.pruners import pruner_from_state
from tests.engine.conftest import assert_each_recorded_once, owner
from webapp.control import lease
from webapp.control.loop import SearchLoop
from webapp.searches.pruning_stats import saved_epochs
from webapp.messaging import messages, transport
from webapp.searches.models import Individual, Search
from webapp.services import lifecycle
from webapp.worker import runner
from webapp.worker.reporter import reporter

pytestmark = pytest.mark.integration

EPOCHS = 10
CONFIG = {"space": {"name": "chain", "max_layers": 4},
          "strategy": {"name": "random", "seed": 3, "params": {"max_evaluations": 24}},
          "training": {"epochs": EPOCHS},
          "pruner": {"name": "curve", "k": 3, "min_steps": 2, "threshold": 0.25},
          "evaluation": {"mode": "simulated", "duration": 0.25, "curves": "realistic"}}


def run_in_threads(search: Search) -> list[threading.Thread]:
    threads: list[threading.Thread] = []

    def send(packet: dict, signature: str, task_id: str, queue: str, first: bool = False) -> None:
        thread = threading.Thread(target=runner.evaluate_packet, args=(packet, signature, task_id), daemon=True)
        thread.start()
        threads.append(thread)

    owner_id = lease.new_owner()
    assert lease.take(search.pk, owner_id)
    assert SearchLoop(search.pk, owner_id, send=send).run() == Search.Status.FINISHED
    for thread in threads:
        thread.join(timeout=10)
    return threads


def test_curve_pruning_stops_some_mid_training_and_the_counts_add_up(engine, monkeypatch):
    monkeypatch.setattr(lifecycle.dispatch, "start_loop", lambda search_id: None)
    search = lifecycle.launch(lifecycle.create_search(owner(), "pruned", CONFIG))
    run_in_threads(search)
    search.refresh_from_db()
    individuals = assert_each_recorded_once(search, 24)
    pruned = [i for i in individuals if i.status == Individual.Status.PRUNED]
    done = [i for i in individuals if i.status == Individual.Status.DONE]
    assert pruned and done and len(pruned) + len(done) == 24
    for individual in pruned:
        assert 2 <= individual.epochs_trained < EPOCHS and len(individual.curve) < EPOCHS
        assert individual.prune["stop"] and "P(beats the 3rd best)" in individual.prune["reason"]
        assert individual.predicted_fitness is not None and individual.fitness is not None
        assert individual.prune["epoch"] <= individual.epochs_trained == individual.curve[-1]["epoch"]
    assert all(i.epochs_trained == EPOCHS and len(i.curve) == EPOCHS for i in done)
    savings = saved_epochs(search.stats)
    assert savings["pruned"] == len(pruned) and savings["budget"] == 24 * EPOCHS
    assert savings["trained"] == pytest.approx(sum(i.epochs_trained for i in individuals))
    assert search.best_fitness == max(i.fitness for i in done), "a pruned partial value is never the best"
    # the strategy was told pruned results as such, with the pruner's prediction as fitness
    state = search.strategy_state
    saved = pruner_from_state(json.loads(json.dumps(state["pruner"])))
    for individual in pruned:
        assert saved.stopped(individual.number).predicted == pytest.approx(individual.predicted_fitness)
    # every pruned one had its stop key set; one stopped too late (it had finished) stays done, and counts as
    # a completed curve for the pruner
    assert all(transport.is_pruned(search.pk, i.pk) for i in pruned)
    finals = saved.state_dict()["finals"]
    assert all(finals[str(i.number)] == pytest.approx(i.fitness) for i in done)


def test_the_worker_stops_at_its_first_report_after_the_stop_request(engine):
    """Each report pushes a progress message and reads the stop key: a stop set between two reports is obeyed
    at the next one, so a pruned evaluation ends within one report interval."""
    origin = messages.Origin(search=77, individual=5, number=0, task_id="t", node="n", device="cpu", slot="n/cpu/0")
    report = reporter(origin, attempt=1)
    assert report(10, 0.1, {"val_accuracy": 0.5, "val_loss": float("nan")}) is False
    transport.request_prune(77, 5)
    assert report(20, 0.2, {"val_accuracy": 0.6}) is True
    taken = transport.take_messages(77, wait=0.1)
    parsed = [messages.parse(item.data) for item in taken]
    assert [(m.step, m.metrics) for m in parsed] == [(10, {"val_accuracy": 0.5}), (20, {"val_accuracy": 0.6})]


def test_a_stop_request_for_a_finished_individual_changes_nothing(engine, monkeypatch):
    monkeypatch.setattr(lifecycle.dispatch, "start_loop", lambda search_id: None)
    config = {**CONFIG, "strategy": {"name": "random", "seed": 5, "params": {"max_evaluations": 4}},
              "pruner": {"name": "none"}}
    search = lifecycle.launch(lifecycle.create_search(owner(), "late stop", config))
    run_in_threads(search)
    individual = Individual.objects.filter(search=search).first()
    before = (individual.status, individual.fitness, individual.curve)
    transport.request_prune(search.pk, individual.pk)
    individual.refresh_from_db()
    assert (individual.status, individual.fitness, individual.curve) == before
    assert all(i.status == Individual.Status.DONE for i in Individual.objects.filter(search=search))


def test_an_nsga2_search_prunes_with_its_known_objectives_and_ends(engine, monkeypatch):
    """Multi-objective: the pruner learns each candidate's parameter count from its progress reports (known
    before training ends, exact) and the search ends with every individual final once."""
    monkeypatch.setattr(lifecycle.dispatch, "start_loop", lambda search_id: None)
    config = {**CONFIG, "strategy": {"name": "nsga2", "seed": 2, "params": {"population": 6, "generations": 3}},
              "pruner": {"name": "curve", "k": 2, "min_steps": 2, "threshold": 0.2}}
    search = lifecycle.launch(lifecycle.create_search(owner(), "nsga2 pruned", config))
    run_in_threads(search)
    search.refresh_from_db()
    individuals = assert_each_recorded_once(search, search.evaluations_done)
    assert {i.status for i in individuals} <= {Individual.Status.DONE, Individual.Status.PRUNED}
    state = pruner_from_state(search.strategy_state["pruner"]).state_dict()
    assert state["params"]["known_objectives"] == [["params", "min"]]
    assert set(state["known"]) == {str(i.number) for i in individuals}
    for individual in individuals:
        assert state["known"][str(individual.number)] == [-float(individual.metrics["params"])]
