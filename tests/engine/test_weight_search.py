"""Weight searches (seed 001) on real workers: the distributed generations equal the single-process run, a slot
killed mid-generation changes nothing, and a stop and resume reproduce the uninterrupted run."""
from __future__ import annotations

import json
import os
import signal

import numpy as np
import pytest
import torch

from evaluators.neuroevolution import WeightEvolution, WeightRun
from tests.engine.conftest import finished, launched, wait_until
from webapp.messaging import transport
from webapp.searches.config import check_config
from webapp.searches.models import Event, Search, WeightGeneration, WeightState
from webapp.services import lifecycle

pytestmark = pytest.mark.integration


def weight_config(method: str, generations: int = 3, layers: list[int] | None = None, population: int = 8,
                  algorithm: str = "openai_es") -> dict:
    return {"kind": "weights", "network": {"kind": "mlp", "layers": layers or [64, 32, 10]},
            "weights": {"population": population, "generations": generations, "method": method, "seed": 5,
                        "batch_size": 128, "algorithm": algorithm}}


def reference(config: dict, generations: int) -> WeightEvolution:
    """The same search in this process alone."""
    evolution = WeightEvolution(WeightRun.from_config(check_config(config)))
    for _ in range(generations):
        evolution.step()
    return evolution


def final_weights(search: Search) -> WeightEvolution:
    evolution = WeightEvolution(WeightRun.from_config(search.config))
    evolution.load_state(bytes(WeightState.objects.get(search=search).data))
    return evolution


def test_cu_su_and_scalars_on_two_slots_equal_the_single_process_run(stack):
    """OpenAI-ES by each method, and SNES by cu (its sigma vector too), on two real slots."""
    stack.evaluator("alpha", wait=False)
    stack.evaluator("beta", wait=False)
    stack.control()
    wait_until(lambda: len(transport.live_slots("eval")) == 2, 120, message="two live slots")
    for method, algorithm in (("cu", "openai_es"), ("scalars", "openai_es"), ("su", "openai_es"), ("cu", "snes")):
        config = weight_config(method, algorithm=algorithm)
        search = finished(launched(f"weights {method} {algorithm}", config).pk, timeout=120)
        assert search.status == Search.Status.FINISHED, search.status_reason
        want = reference(config, 3)
        got = final_weights(search)
        assert got.generation == 3 and search.evaluations_done == 3 * 8
        if method == "su":  # partials summed in another order than the single sum: equal to float rounding
            assert torch.allclose(got.theta, want.theta, rtol=1e-6, atol=1e-7)
        else:
            assert got.digest() == want.digest()  # bit for bit
        if algorithm == "snes":
            assert np.array_equal(got.sigma, want.sigma) and not np.allclose(got.sigma, 0.05)
        rows = list(WeightGeneration.objects.filter(search=search))
        assert [row.number for row in rows] == [0, 1, 2] and all(row.workers == 2 for row in rows)
        assert all(sum(row.evaluated.values()) == 8 for row in rows)
        assert set().union(*[row.evaluated for row in rows]) == {"alpha", "beta"}
        assert all(row.traffic["bytes"] > 0 and row.traffic["weights_bytes"] == 8 * got.size * 4 for row in rows)
        assert all(set(row.timings) == {"evaluate", "gather", "gradient", "update", "total"} for row in rows)
        assert rows[-1].validation_accuracy == pytest.approx(want.validate())
        assert Event.objects.filter(search=search, type="weights.generation").count() == 3
        state = WeightState.objects.get(search=search)
        assert state.weights_pt and "def build()" in state.source
        print(method, [row.traffic for row in rows[-1:]], [row.timings for row in rows[-1:]])


def test_three_slots_split_a_generation_in_three_and_equal_the_single_process_run(stack):
    stack.evaluator("gamma", slots=3, wait=False)
    stack.control()
    wait_until(lambda: len(transport.live_slots("eval")) == 3, 120, message="three live slots")
    for method in ("cu", "su"):
        config = weight_config(method, generations=2, population=12)
        search = finished(launched(f"three {method}", config).pk, timeout=120)
        assert search.status == Search.Status.FINISHED, search.status_reason
        assert all(row.workers == 3 for row in WeightGeneration.objects.filter(search=search))
        got, want = final_weights(search), reference(config, 2)
        assert torch.allclose(got.theta, want.theta, rtol=1e-6, atol=1e-7)
        if method == "cu":
            assert got.digest() == want.digest()


def test_a_slot_killed_mid_generation_leaves_the_same_weights(stack):
    """kill -9 of the pool process computing a part: the part is computed again elsewhere, and the weights after
    the generation are those of the run without the fault, bit for bit."""
    stack.evaluator("alpha", wait=False)
    stack.evaluator("beta", wait=False)
    stack.control()
    wait_until(lambda: len(transport.live_slots("eval")) == 2, 120, message="two live slots")
    config = weight_config("cu", generations=2, layers=[64, 1024, 1024, 10], population=16)
    search = launched("weights killed", config)
    redis_ = transport.client()

    def a_running_part():
        keys = list(redis_.scan_iter(match=f"nas:ne:{search.pk}:hb:1:*", count=100))
        values = [redis_.get(key) for key in keys]
        return next((json.loads(v) for v in values if v), None)

    victim = wait_until(a_running_part, 120, interval=0.02, message="a part of generation 1 running")
    os.kill(victim["pid"], signal.SIGKILL)
    search = finished(search.pk, timeout=180)
    assert search.status == Search.Status.FINISHED, search.status_reason
    assert final_weights(search).digest() == reference(config, 2).digest()


def test_a_stop_and_resume_reproduce_the_uninterrupted_run(stack):
    stack.evaluator("alpha", slots=2, wait=False)
    stack.control()
    config = weight_config("scalars", generations=12)
    search = launched("weights stop", config)
    wait_until(lambda: WeightGeneration.objects.filter(search=search).count() >= 3, 120, message="3 generations")
    lifecycle.stop(Search.objects.get(pk=search.pk))
    stopped = wait_until(lambda: Search.objects.filter(pk=search.pk, status=Search.Status.STOPPED).first(), 60,
                         message="stopped")
    done_then = WeightState.objects.get(search=stopped).generation
    assert 3 <= done_then < 12
    lifecycle.resume(stopped)
    search = finished(search.pk, timeout=120)
    assert search.status == Search.Status.FINISHED, search.status_reason
    assert final_weights(search).digest() == reference(config, 12).digest()
    numbers = list(WeightGeneration.objects.filter(search=search).values_list("number", flat=True))
    assert numbers == list(range(12))
    assert np.isfinite(search.best_fitness)
