"""The reinforce explorer: what its policy learns, from what, and that a resumed one continues exactly (the
contract in test_strategies.py runs it over every space too)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from nas.spaces import get_space
from nas.strategies import Reinforce, Result, get_strategy, strategy_from_state
from nas.strategies.reinforce import entropy_gradient, softmax
from nas.testing.strategies import IntSpace, evaluate


def matches(genome: dict) -> float:
    """A landscape on the toy space: the share of genes equal to 3."""
    return sum(gene == 3 for gene in genome["genes"]) / len(genome["genes"])


def run(strategy, fitness, batch: int = 4) -> list[float]:
    """Asks ``batch`` at a time and tells them newest first; the rewards in the order told."""
    rewards = []
    while not strategy.done:
        for candidate in reversed(strategy.ask(batch)):
            rewards.append(fitness(candidate.genome))
            strategy.tell(candidate.id, Result(fitness=rewards[-1], objectives={"size": -rewards[-1]}))
    return rewards


def test_the_policy_learns_the_rewarded_choices():
    space = IntSpace(genes=6, values=4)
    strategy = Reinforce(space, seed=0, max_evaluations=120)
    rewards = run(strategy, matches)  # a uniform sample matches a quarter of the genes
    assert np.mean(rewards[:12]) < 0.4 and np.mean(rewards[60:]) > 0.6 and max(rewards) == 1.0
    assert all(p[3] > 0.5 for p in strategy.probabilities().values()), strategy.probabilities()


def test_a_min_objective_is_a_negated_reward():
    space = IntSpace(genes=6, values=4)
    strategy = Reinforce(space, seed=0, objectives=[["size", "min"]], max_evaluations=120)
    run(strategy, matches)  # size = -matches: minimising it is maximising matches
    assert all(p[3] > 0.5 for p in strategy.probabilities().values())


def test_failures_and_missing_objectives_leave_the_policy_as_it_was():
    strategy = Reinforce(IntSpace(), seed=1, objectives=[["accuracy", "max"]], max_evaluations=20)
    first, second, third = strategy.ask(3)
    strategy.tell(first.id, Result(fitness=0.5, objectives={"accuracy": 0.5}))
    strategy.tell(second.id, Result(fitness=0.9, objectives={"accuracy": 0.9}))
    before = strategy.state_dict()["strategy"]
    strategy.tell(third.id, Result.failed("oom"))
    (fourth,) = strategy.ask(1)
    strategy.tell(fourth.id, Result(fitness=0.7))  # no accuracy: no reward
    after = strategy.state_dict()["strategy"]
    assert after == before and after["updates"] == 2


def test_one_update_is_the_policy_gradient_with_its_entropy_bonus():
    space = IntSpace(genes=1, values=3)
    strategy = Reinforce(space, seed=2, policy_learning_rate=0.5, entropy=0.1, baseline_decay=0.9, max_evaluations=5)
    a, b = strategy.ask(2)
    strategy.tell(a.id, Result(fitness=1.0))  # the first reward sets the baseline: only the entropy term moves
    p0 = softmax(np.zeros(3))
    assert np.allclose(strategy.probabilities()["g0"], softmax(0.5 * 0.1 * entropy_gradient(p0)))
    logits = np.log(strategy.probabilities()["g0"])
    strategy.tell(b.id, Result(fitness=2.0))
    delta = 1.0
    spread = 0.1 * delta**2
    p = softmax(logits)
    step = -p
    step[b.genome["genes"][0]] += 1
    expected = softmax(logits + 0.5 * (delta / np.sqrt(spread) * step + 0.1 * entropy_gradient(p)))
    assert np.allclose(strategy.probabilities()["g0"], expected)
    assert strategy.state_dict()["strategy"]["baseline"] == pytest.approx(1.0 + 0.1 * delta)


def test_the_entropy_gradient_is_the_derivative_of_the_entropy():
    logits = np.array([0.3, -1.2, 2.0, 0.0])

    def entropy(x):
        p = softmax(x)
        return -float(p @ np.log(p))

    numeric = [(entropy(logits + h) - entropy(logits - h)) / 2e-6 for h in np.eye(4) * 1e-6]
    assert np.allclose(entropy_gradient(softmax(logits)), numeric, atol=1e-6)


def test_a_chain_updates_only_the_layers_a_candidate_has():
    space = get_space("chain", max_layers=4)
    strategy = Reinforce(space, seed=3, entropy=0.0, max_evaluations=10)
    a, b = strategy.ask(2)
    strategy.tell(a.id, Result(fitness=0.1))
    strategy.tell(b.id, Result(fitness=0.9))
    moved = {name for name, p in strategy.probabilities().items() if not np.allclose(p, p[0])}
    expected = {"n_layers"} | {f"l{i + 1}_{gene}" for i in range(len(b.genome["layers"]))
                               for gene in ("kernel", "filters")}
    assert moved == expected


def test_beliefs_are_the_policy_as_json():
    space = get_space("cell")
    strategy = get_strategy("reinforce", space, 4, max_evaluations=30)
    for c in strategy.ask(5):
        strategy.tell(c.id, evaluate(c))
    beliefs = json.loads(json.dumps(strategy.beliefs(), allow_nan=False))
    assert beliefs["kind"] == "policy" and beliefs["told"] == 5 and beliefs["updates"] == 4  # one failed
    assert [d["name"] for d in beliefs["decisions"]] == [d.name for d in space.decisions()]
    for decision in beliefs["decisions"]:
        assert len(decision["probabilities"]) == len(decision["choices"])
        assert sum(decision["probabilities"]) == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize("space_name", ["pelee", "chain", "cell"])
def test_a_resumed_policy_proposes_what_the_uninterrupted_one_would(space_name):
    """Stopped with candidates under way, saved as strict JSON, resumed: the same candidates, the same policy."""
    space = get_space(space_name)

    def drive(strategy, stop_at: int | None):
        asked, pending = [], []
        for step in range(12):
            if step == stop_at:
                strategy = strategy_from_state(space, json.loads(json.dumps(strategy.state_dict(), allow_nan=False)))
            batch = strategy.ask(3)
            asked += [c.to_dict() for c in batch]
            pending += batch
            for c in pending[:2]:
                strategy.tell(c.id, evaluate(c))
            pending = pending[2:]
        return asked, strategy.probabilities()

    plain = drive(get_strategy("reinforce", space, 7, max_evaluations=60), None)
    for stop_at in (1, 5, 9):
        assert drive(get_strategy("reinforce", space, 7, max_evaluations=60), stop_at) == plain


def test_a_settled_policy_spreads_out_instead_of_ending_the_search():
    """Once the policy draws known genomes, each repeat is an entropy step: the search spends its budget (on
    this landscape, 100 repeats in a row ended it after 114 evaluations when repeats did not move the policy)."""
    space = get_space("cell")
    target = space.sample(np.random.default_rng(4))["edges"]
    strategy = Reinforce(space, seed=0, max_evaluations=150)
    rewards = run(strategy, lambda genome: sum(genome["edges"][e] == op for e, op in target.items()) / 6)
    assert len(rewards) == 150 and max(rewards) == 1.0
