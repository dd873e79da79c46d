"""The tpe explorer (Optuna's TPESampler behind the strategy contract): its study is the archive replayed, a
resumed one proposes exactly what the uninterrupted one would, several objectives give a front, and what it
believes is read from Optuna's own densities (the contract in test_strategies.py runs it over every space too)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import optuna
import pytest

from nas.spaces import get_space
from nas.strategies import TPE, Result, get_strategy, strategy_from_state
from nas.testing.strategies import IntSpace, evaluate

ROOT = Path(__file__).resolve().parents[2]


def matches(genome: dict) -> float:
    return sum(gene == 3 for gene in genome["genes"]) / len(genome["genes"])


def drive(strategy, space, steps: int, stop_at=(), fitness=None):
    """Asks 3 and tells 2 (oldest first) per step, so candidates stay pending across a stop; before each step
    in ``stop_at`` the strategy is rebuilt from its state as strict JSON."""
    asked, pending = [], []
    for step in range(steps):
        if step in stop_at:
            strategy = strategy_from_state(space, json.loads(json.dumps(strategy.state_dict(), allow_nan=False)))
        batch = strategy.ask(3)
        asked += [c.to_dict() for c in batch]
        pending += batch
        for c in pending[:2]:
            strategy.tell(c.id, Result(fitness=fitness(c.genome)) if fitness else evaluate(c))
        pending = pending[2:]
    return asked, strategy


def trials(study) -> list[tuple]:
    return [(t.state.name, t.params, t.values) for t in study.get_trials(deepcopy=False)]


@pytest.mark.parametrize("space_name", ["pelee", "chain", "cell"])
def test_a_resumed_tpe_proposes_what_the_uninterrupted_one_would(space_name):
    space = get_space(space_name)
    plain, strategy = drive(get_strategy("tpe", space, 7, startup_trials=5, max_evaluations=60), space, 20)
    for stop_at in ((2,), (6, 7), (11, 15, 19)):
        resumed, again = drive(get_strategy("tpe", space, 7, startup_trials=5, max_evaluations=60), space, 20,
                               stop_at)
        assert resumed == plain, stop_at
        assert json.dumps(again.state_dict()) == json.dumps(strategy.state_dict())


def test_the_rebuilt_study_is_the_live_one_replayed():
    """Candidates complete, failed and running, and the repeats, in the order drawn: the same trials."""
    space = IntSpace(genes=3, values=3)  # 27 genomes: TPE soon repeats itself
    asked, live = drive(TPE(space, seed=1, startup_trials=4, max_evaluations=26), space, 12, fitness=matches)
    assert live._repeats, "the run should have drawn known genomes"
    assert live.pending, "the run should have candidates running"
    rebuilt = strategy_from_state(space, json.loads(json.dumps(live.state_dict())))
    assert trials(rebuilt._open()) == trials(live._study)
    states = {state for state, _, _ in trials(live._study)}
    assert {"COMPLETE", "RUNNING", "PRUNED"} <= states
    assert rebuilt._trials == live._trials


def test_repeats_are_pruned_trials_and_an_exhausted_space_ends_the_search():
    space = IntSpace(genes=2, values=3)
    strategy = TPE(space, seed=0, startup_trials=2, max_evaluations=50)
    asked, strategy = drive(strategy, space, 40, fitness=matches)
    assert len({c["key"] for c in asked}) == len(asked) == 9 and strategy.done
    assert len(strategy._repeats) >= 101
    pruned = [t for t in strategy._study.get_trials(deepcopy=False) if t.state.name == "PRUNED"]
    assert [t.params for t in pruned] == [r["params"] for r in strategy._repeats]


def test_failures_are_failed_trials_and_pruned_results_complete():
    strategy = TPE(IntSpace(), seed=0, objectives=[["accuracy", "max"]], max_evaluations=10)
    a, b, c = strategy.ask(3)
    strategy.tell(a.id, Result.failed("oom"))
    strategy.tell(b.id, Result(fitness=0.4, objectives={"accuracy": 0.4}, pruned=True))
    strategy.tell(c.id, Result(fitness=0.9))  # no accuracy: nothing to model
    assert [(s, v) for s, _, v in trials(strategy._study)] == [("FAIL", None), ("COMPLETE", [0.4]), ("FAIL", None)]


def test_tpe_learns_the_rewarded_choices():
    space = IntSpace(genes=6, values=4)
    asked, _ = drive(TPE(space, seed=0, max_evaluations=120), space, 40, fitness=matches)
    found = [matches(c["genome"]) for c in asked]
    assert np.mean(found[:10]) < 0.4 and np.mean(found[60:]) > 0.45 and max(found) >= 5 / 6  # uniform: 1/4


def test_several_objectives_are_multi_objective_tpe_with_a_front():
    space = get_space("pelee")
    strategy = get_strategy("tpe", space, 3, objectives=[["accuracy", "max"], ["params", "min"]],
                            startup_trials=5, max_evaluations=40)
    _, strategy = drive(strategy, space, 14)
    assert [d.name for d in strategy._study.directions] == ["MAXIMIZE", "MINIMIZE"]
    front = strategy.best(None)
    points = [(r.objectives["accuracy"], -r.objectives["params"]) for _, r in front]
    assert len(front) >= 1 and points == sorted(points, reverse=True)
    for a in points:
        assert not any(b != a and b[0] >= a[0] and b[1] >= a[1] for b in points), "a front member is dominated"
    assert strategy.best(1) == front[:1]


def test_beliefs_are_optunas_good_and_bad_densities():
    space = get_space("chain", max_layers=4)
    strategy = get_strategy("tpe", space, 2, startup_trials=6, max_evaluations=40)
    for c in strategy.ask(4):
        strategy.tell(c.id, evaluate(c, fail_every=0))
    early = strategy.beliefs()
    assert early["kind"] == "densities" and early["modelled"] is False and early["decisions"] == []
    _, strategy = drive(strategy, space, 8)
    beliefs = json.loads(json.dumps(strategy.beliefs(), allow_nan=False))
    assert beliefs["modelled"] and beliefs["good"] >= 1 and beliefs["bad"] >= 1
    assert [d["name"] for d in beliefs["decisions"]] == [d.name for d in space.decisions()]
    for decision in beliefs["decisions"]:
        for density in ("good", "bad"):
            assert len(decision[density]) == len(decision["choices"])
            assert sum(decision[density]) == pytest.approx(1.0, abs=1e-3)
    best = strategy.best(1)[0][0].genome  # the good density favours the best genome's length
    length = next(d for d in beliefs["decisions"] if d["name"] == "n_layers")
    assert length["good"][length["choices"].index(len(best["layers"]))] > 1 / len(length["choices"])


def test_the_pinned_optuna_has_the_helpers_beliefs_read():
    """Beliefs use Optuna's private split and estimator: an upgrade that moves them must fail here."""
    from optuna.samplers._tpe import sampler as tpe

    assert optuna.__version__ == "5.0.0"
    assert callable(tpe._split_trials) and callable(tpe.default_gamma)
    assert callable(tpe.default_gamma_multiobjective) and callable(tpe.TPESampler._build_parzen_estimator)


def test_building_checking_and_loading_a_tpe_imports_no_optuna():
    """What the web process does with a strategy (check a configuration, read its parameters, load a state)
    needs no Optuna: only asking and telling import it."""
    probe = (
        "import json, sys\n"
        "from nas.spaces import get_space\n"
        "from nas.strategies import STRATEGIES, get_strategy, strategy_from_state\n"
        "s = get_strategy('tpe', get_space('chain'), 1, objectives=[['accuracy', 'max']])\n"
        "STRATEGIES['tpe'].describe_params()\n"
        "strategy_from_state(get_space('chain'), json.loads(json.dumps(s.state_dict())))\n"
        "assert 'optuna' not in sys.modules, 'optuna was imported'\n"
        "s.ask(1)\n"
        "assert 'optuna' in sys.modules and 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", probe], cwd=ROOT, check=True, timeout=120)
