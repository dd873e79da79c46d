"""Every strategy over every space against the contract, then what is particular to each strategy and the registry."""
from __future__ import annotations

import json
import math

import pytest

from nas.spaces import get_space
from nas.strategies import (
    NSGA2,
    STRATEGIES,
    GenerationalGA,
    RandomSearch,
    RegularizedEvolution,
    Result,
    get_strategy,
    strategy_from_state,
)
from nas.testing import StrategyContract
from nas.testing.strategies import IntSpace, drive, evaluate

#: Small budgets, so the contract stays fast; each exceeds the 9 genomes of the contract's exhausted space.
CONFIGS = {
    "random": {"max_evaluations": 24},
    "generational": {"population": 6, "generations": 5},
    "regularized": {"population": 6, "sample_size": 3, "max_evaluations": 24},
    "nsga2": {"population": 6, "generations": 5},
    "reinforce": {"max_evaluations": 24},
    "tpe": {"startup_trials": 4, "max_evaluations": 24},
}


@pytest.fixture(params=["pelee", "chain", "cell"])
def space(request):
    return get_space(request.param)


@pytest.fixture(params=list(CONFIGS))
def make_strategy(request):
    return lambda space, seed: get_strategy(request.param, space, seed, **CONFIGS[request.param])


class TestStrategyContract(StrategyContract):
    pass


def ok(fitness: float, **objectives: float) -> Result:
    return Result(fitness=fitness, objectives=objectives)


# --- the generational GA -------------------------------------------------------------------------------


def test_ga_defaults_are_seed_000s():
    assert GenerationalGA.default_params() == {
        "population": 20, "generations": 20, "p_mutation": 0.58, "p_crossover": 0.5, "elitism": 1,
        "max_evaluations": None,
    }
    strategy = GenerationalGA(get_space("pelee"))
    run = drive(strategy, get_space("pelee"), fail_every=0)
    generations = [c.generation for c in run.asked]
    assert generations[:20] == [0] * 20 and max(generations) == 19
    assert all(generations.count(g) <= 20 for g in range(20))
    assert 200 < len(run.asked) < 400, "unchanged copies (about a fifth of the children) are not evaluated"


def test_ga_barrier_returns_fewer_than_asked():
    strategy = GenerationalGA(IntSpace(), seed=0, population=6, generations=3)
    first = strategy.ask(10)
    assert len(first) == 6 and {c.generation for c in first} == {0}
    assert strategy.ask(3) == []
    for c in first[:-1]:
        strategy.tell(c.id, evaluate(c, fail_every=0))
    assert strategy.ask(3) == [] and not strategy.done
    strategy.tell(first[-1].id, evaluate(first[-1], fail_every=0))
    second = strategy.ask(2) + strategy.ask(10)
    assert 0 < len(second) <= 6 and {c.generation for c in second} == {1}
    assert [c.id for c in second] == list(range(6, 6 + len(second)))


def test_ga_copies_are_reused_not_evaluated():
    """With neither crossover nor mutation every child is a copy: generation 1 has nothing new, so it ends."""
    strategy = GenerationalGA(IntSpace(), seed=0, population=6, generations=5, p_crossover=0.0, p_mutation=0.0)
    run = drive(strategy, IntSpace(), fail_every=0)
    assert len(run.asked) == 6 and run.strategy.done
    assert set(run.strategy.members) <= {c.key for c in run.asked}


def test_ga_keeps_its_elite_and_labels_its_operators():
    space = IntSpace()
    strategy = GenerationalGA(space, seed=1, population=6, generations=4, p_crossover=1.0, p_mutation=0.0)
    generation = strategy.ask(6)
    for c in generation:
        strategy.tell(c.id, evaluate(c, fail_every=0))
    champion = strategy.best(1)[0][0].key
    children = strategy.ask(6)
    assert strategy.members[0] == champion
    assert {c.operator for c in children} <= {"crossover", "crossover+mutation"}
    assert all(len(c.parents) in (1, 2) for c in children)


def test_ga_max_evaluations_is_an_exact_budget():
    run = drive(GenerationalGA(get_space("cell"), generations=None, max_evaluations=30), get_space("cell"))
    assert len(run.asked) == 30


# --- regularized evolution ---------------------------------------------------------------------------


def test_regularized_has_no_barrier_and_samples_until_a_population_is_in():
    strategy = RegularizedEvolution(IntSpace(), seed=0, population=4, sample_size=2, max_evaluations=20)
    first = strategy.ask(6)
    assert len(first) == 6 and all(c.operator == "sample" for c in first)
    for c in first[:4]:
        strategy.tell(c.id, evaluate(c, fail_every=0))
    children = strategy.ask(5)
    assert len(children) == 5 and all(c.operator == "mutation" and len(c.parents) == 1 for c in children)
    assert {p for c in children for p in c.parents} <= {c.key for c in first[:4]}
    assert len(strategy.ask(100)) == 20 - 11


def test_regularized_keeps_its_size_and_drops_the_oldest():
    space = IntSpace()
    strategy = RegularizedEvolution(space, seed=0, population=5, sample_size=2, max_evaluations=40)
    told: list = []
    outstanding: list = []
    while not strategy.done:
        outstanding += strategy.ask(3)
        for c in outstanding[::-2]:  # newest first: births and arrivals disagree
            result = evaluate(c)
            strategy.tell(c.id, result)
            if result.ok:
                told.append(c)
            youngest = sorted(told, key=lambda t: t.id)[-5:]
            assert strategy.members == [t.key for t in told if t in youngest]
            outstanding.remove(c)


# --- NSGA-II -----------------------------------------------------------------------------------------


def test_nsga2_front_on_a_hand_made_set():
    strategy = NSGA2(IntSpace(), seed=0, population=8, generations=2)
    candidates = strategy.ask(7)
    results = [
        ok(0.9, accuracy=0.9, params=100.0),
        ok(0.8, accuracy=0.8, params=50.0),
        ok(0.95, accuracy=0.95, params=200.0),
        ok(0.85, accuracy=0.85, params=100.0),  # dominated by the first
        ok(0.7, accuracy=0.7, params=60.0),  # dominated by the second
        Result.failed("oom"),
        ok(0.99, accuracy=0.99),  # no params: counts as failed
    ]
    for c, result in zip(candidates, results):
        strategy.tell(c.id, result)
    front = strategy.best()
    assert [c.id for c, _ in front] == [2, 0, 1]
    assert [c.id for c, _ in strategy.best(2)] == [2, 0]
    assert strategy.sort_key(results[0]) == (0.9, -100.0)
    assert strategy.sort_key(results[5]) == strategy.sort_key(results[6]) == (-math.inf, -math.inf)


def test_nsga2_survivors_start_with_the_front():
    space = get_space("pelee")
    strategy = NSGA2(space, seed=0, population=6, generations=3)
    for _ in range(2):
        batch = strategy.ask(6)
        for c in batch:
            strategy.tell(c.id, evaluate(c, fail_every=0))
    strategy.ask(6)  # breeds generation 2 from the survivors of generations 0 and 1
    front, parents = {c.key for c, _ in strategy.best(None)}, set(strategy.parents)
    assert len(parents) == 6
    assert front <= parents if len(front) <= 6 else parents <= front


def test_nsga2_reads_fitness_as_an_objective():
    strategy = NSGA2(IntSpace(), objectives=[["fitness", "max"]], population=4, generations=1)
    for c in strategy.ask(4):
        strategy.tell(c.id, ok(c.id / 10))
    assert [c.id for c, _ in strategy.best()] == [3]


# --- the registry and parameters -------------------------------------------------------------------------


def test_registry_names_and_defaults_build():
    assert list(STRATEGIES) == ["random", "generational", "regularized", "nsga2", "reinforce", "tpe"]
    space = get_space("chain")
    for name, cls in STRATEGIES.items():
        description = json.loads(json.dumps(cls.describe_params()))
        assert [d["name"] for d in description] == list(cls.default_params())
        assert all(d["help"] and d["type"] for d in description)
        strategy = get_strategy(name, space, 0, **cls.default_params())
        assert type(strategy) is cls and strategy.name == name


@pytest.mark.parametrize(
    "name, params, words",
    [
        ("generational", {"p_mutation": 1.5}, ["`p_mutation`", "[0, 1]", "1.5"]),
        ("generational", {"population": 1}, ["`population`", ">= 2", "population=1"]),
        ("generational", {"population": "20"}, ["`population`", "an integer", "'20'"]),
        ("generational", {"generations": True}, ["`generations`", "True"]),
        ("generational", {"generations": None}, ["`generations`", "`max_evaluations`", "None"]),
        ("generational", {"elitism": 20}, ["`elitism`", "`population`", "elitism=20"]),
        ("regularized", {"sample_size": 30}, ["`sample_size`", "`population`", "sample_size=30"]),
        ("regularized", {"max_evaluations": None}, ["`max_evaluations`", "None"]),
        ("random", {"max_evaluations": 0}, ["`max_evaluations`", ">= 1", "max_evaluations=0"]),
        ("random", {"population": 5}, ["'population'", "max_evaluations"]),
        ("nsga2", {"objectives": [["accuracy", "up"]]}, ["`objectives`", "'up'"]),
        ("nsga2", {"objectives": []}, ["`objectives`", "[]"]),
        ("reinforce", {"objectives": [["accuracy", "max"], ["params", "min"]]},
         ["`objectives`", "one reward", "nsga2 or tpe", "'params'"]),
        ("reinforce", {"objectives": [["accuracy", "up"]]}, ["`objectives`", "one [name", "'up'"]),
        ("reinforce", {"policy_learning_rate": -0.1}, ["`policy_learning_rate`", "[0.0, 10.0]", "-0.1"]),
        ("reinforce", {"baseline_decay": 1.0}, ["`baseline_decay`", "[0.0, 0.999]"]),
    ],
)
def test_bad_parameters_are_named(name, params, words):
    with pytest.raises(ValueError) as error:
        get_strategy(name, get_space("pelee"), 0, **params)
    for word in words:
        assert word in str(error.value)


def test_unknown_names_and_seeds_are_refused():
    with pytest.raises(ValueError, match="random, generational, regularized, nsga2, reinforce, tpe"):
        get_strategy("annealing", get_space("pelee"))
    with pytest.raises(ValueError, match="`seed`"):
        get_strategy("random", get_space("pelee"), -1)
    with pytest.raises(ValueError, match="'annealing'"):
        strategy_from_state(get_space("pelee"), {"name": "annealing"})


def test_state_needs_its_own_space_and_dispatches_by_name():
    strategy = RegularizedEvolution(get_space("chain"), seed=3, max_evaluations=10)
    for c in strategy.ask(4):
        strategy.tell(c.id, evaluate(c))
    state = json.loads(json.dumps(strategy.state_dict()))
    assert type(strategy_from_state(get_space("chain"), state)) is RegularizedEvolution
    with pytest.raises(ValueError, match="max_layers"):
        strategy_from_state(get_space("chain", max_layers=4), state)
    with pytest.raises(ValueError, match="'random'"):
        RandomSearch.from_state(get_space("chain"), state)


def test_non_finite_results_are_recorded_as_failures():
    strategy = RandomSearch(IntSpace(), max_evaluations=3)
    a, b, c = strategy.ask(3)
    strategy.tell(a.id, Result(fitness=float("nan")))
    strategy.tell(b.id, Result(fitness=0.5, objectives={"latency": float("inf"), "params": 3}))
    strategy.tell(c.id, Result())
    json.dumps(strategy.state_dict(), allow_nan=False)
    assert [r.failure for r in (strategy._results[i] for i in range(3))] == ["non-finite fitness", None, "no fitness"]
    assert strategy.best(None) == [(b, Result(fitness=0.5, objectives={"params": 3.0}))]


def test_state_dict_converts_each_row_once_and_stays_exact():
    """A big search saves its state after every result: the archive's rows are converted once and reused, and
    each state still equals a freshly built one (and an earlier state is not changed by later ones)."""
    strategy = RegularizedEvolution(get_space("chain"), seed=5, population=4, sample_size=2, max_evaluations=30)
    states = []
    while not strategy.done:
        asked = strategy.ask(3)
        for c in asked[:2]:  # one of each three stays pending across a save
            strategy.tell(c.id, evaluate(c))
        states.append((json.dumps(strategy.state_dict()), strategy.state_dict()))
        for c in asked[2:]:
            strategy.tell(c.id, evaluate(c))
    for frozen, live in states:
        assert json.dumps(live) == frozen, "a later save changed an earlier state"
    final = strategy.state_dict()
    assert final["candidates"][0] is states[0][1]["candidates"][0], "rows are converted again at each save"
    rebuilt = strategy_from_state(get_space("chain"), json.loads(json.dumps(final)))
    assert json.dumps(rebuilt.state_dict()) == json.dumps(final)
    assert len(final["candidates"]) == 30 and len(final["results"]) == 30
