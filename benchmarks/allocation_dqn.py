"""Seed 003's scheduler: a DQN agent that sizes each candidate's gang, trained and compared in the allocation
benchmark's simulator (``benchmarks/allocation_sim.py``), never in ``nas/`` (numpy only, no torch needed).

As the paper gives it (``SEEDS.md`` §003), adapted to one decision per candidate:

- **state**: the time (in typical durations), the running tasks (how many, their progress: elapsed over expected,
  the devices they hold: ``T_pro``, ``E_g``), the devices available (``G_a``: free here, free in all), the cluster's
  utilisation ``U``, and what a search adds that the paper's task list has no room for: the work in sight (waiting,
  more before the barrier) per device, the measured spread and each gang size's measured efficiency;
- **action**: the gang size for the incoming candidate (``T_g``; ``T_e`` is 1: one evaluator per candidate),
  capped by the devices free on the worker's host;
- **reward**: over the scheduling period until the next decision, the cluster's utilisation minus the time that
  passed (in typical durations): utilisation plus speedup, the paper leaves the weighting open;
- **loss**: ``(y - Q(s, a))^2`` with ``y = R + gamma max Q_target(s', a')``, a replay memory and a target network.

It decides from exactly the records and pending work the planner gets (the same policy signature).
"""
from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np

from nas.allocation import Allocation, Pending, ThroughputModel, host_state

ACTIONS = (1, 2, 4)
FEATURES = 14
WEIGHTS = Path(__file__).resolve().parent / "results" / "allocation_dqn.npz"


class QNetwork:
    """A two-layer perceptron ``state -> Q(state, gang size)``, trained by plain SGD with momentum."""

    def __init__(self, seed: int = 0, hidden: int = 32) -> None:
        rng = np.random.default_rng(seed)
        self.params = {"w1": rng.normal(0, 1 / math.sqrt(FEATURES), (FEATURES, hidden)), "b1": np.zeros(hidden),
                       "w2": rng.normal(0, 1 / math.sqrt(hidden), (hidden, len(ACTIONS))), "b2": np.zeros(len(ACTIONS))}
        self.velocity = {k: np.zeros_like(v) for k, v in self.params.items()}

    def q(self, states: np.ndarray) -> np.ndarray:
        hidden = np.maximum(0.0, states @ self.params["w1"] + self.params["b1"])
        return hidden @ self.params["w2"] + self.params["b2"]

    def step(self, states: np.ndarray, actions: np.ndarray, targets: np.ndarray, rate: float = 1e-3) -> float:
        pre = states @ self.params["w1"] + self.params["b1"]
        hidden = np.maximum(0.0, pre)
        out = hidden @ self.params["w2"] + self.params["b2"]
        rows = np.arange(len(actions))
        error = out[rows, actions] - targets
        d_out = np.zeros_like(out)
        d_out[rows, actions] = 2 * error / len(actions)
        grads = {"w2": hidden.T @ d_out, "b2": d_out.sum(0)}
        d_hidden = (d_out @ self.params["w2"].T) * (pre > 0)
        grads.update(w1=states.T @ d_hidden, b1=d_hidden.sum(0))
        for key, grad in grads.items():
            self.velocity[key] = 0.9 * self.velocity[key] - rate * np.clip(grad, -5, 5)
            self.params[key] += self.velocity[key]
        return float(np.mean(error ** 2))

    def copy(self) -> QNetwork:
        other = QNetwork.__new__(QNetwork)
        other.params = {k: v.copy() for k, v in self.params.items()}
        other.velocity = {k: np.zeros_like(v) for k, v in self.params.items()}
        return other


def features(model: ThroughputModel, records: list, pending: Pending, now: float, here: str, free: dict) -> np.ndarray:
    hosts = [host_state(record, now, free.get(record["host"])) for record in records]
    devices = sum(h.devices for h in hosts)
    own = next(h for h in hosts if h.name == here)
    typical = model.duration(here, 1)
    running = [r for record in records for r in record.get("running", ())]
    progress = [min(3.0, (now - float(r["started"])) / max(1e-6, float(r["expected"]))) for r in running]
    busy = sum(int(r["gang"]) for r in running)
    more = pending.more if pending.more is not None else 8 * devices
    return np.array([
        min(20.0, now / typical / 10), len(running) / devices, float(np.mean(progress)) if progress else 0.0,
        float(np.mean([int(r["gang"]) for r in running])) / 4 if running else 0.0, own.free / own.devices,
        sum(h.free for h in hosts) / devices, busy / devices, min(10.0, pending.waiting / devices),
        min(10.0, more / devices), model.spread(), model.efficiency(here, 2), model.efficiency(here, 4),
        math.log(own.devices), 1.0])


class DQNPolicy:
    """The agent as a simulator policy; ``learning`` keeps transitions and trains as it goes (epsilon-greedy)."""

    def __init__(self, network: QNetwork, learning: bool = False, epsilon: float = 0.0, seed: int = 0) -> None:
        self.network = network
        self.target = network.copy()
        self.learning = learning
        self.epsilon = epsilon
        self.random = random.Random(seed)
        self.memory: list = []
        self.last = None  # (state, action, now, busy device-seconds rate)
        self.gamma = 0.97
        self.steps = 0

    def start_episode(self) -> None:
        self.last = None

    def __call__(self, model, records, pending, now, here, free) -> Allocation:
        state = features(model, records, pending, now, here, free)
        own = next(r for r in records if r["host"] == here)
        fits = [i for i, g in enumerate(ACTIONS) if g in own["sizes"] and g <= free[here]]
        if not fits:
            return Allocation(None, 0, "dqn: no gang fits", "wait")
        if self.learning and self.last is not None:
            previous, action, then, typical = self.last
            devices = sum(int(r["devices"]) for r in records)
            used = sum(int(r["gang"]) for record in records for r in record.get("running", ())) / devices
            reward = used * 0.1 - (now - then) / typical
            self.memory.append((previous, action, reward, state))
            self.memory = self.memory[-20000:]
            self._train()
        if self.learning and self.random.random() < self.epsilon:
            index = self.random.choice(fits)
        else:
            values = self.network.q(state[None, :])[0]
            index = max(fits, key=lambda i: values[i])
        self.last = (state, index, now, model.duration(here, 1))
        gang = ACTIONS[index]
        return Allocation(here, gang, f"dqn: gang of {gang} has the highest Q among the sizes that fit", "dqn")

    def _train(self, batch: int = 32) -> None:
        if len(self.memory) < batch:
            return
        sample = self.random.sample(self.memory, batch)
        states = np.stack([s for s, _, _, _ in sample])
        actions = np.array([a for _, a, _, _ in sample])
        rewards = np.array([r for _, _, r, _ in sample])
        following = np.stack([n for _, _, _, n in sample])
        targets = rewards + self.gamma * self.target.q(following).max(axis=1)
        self.network.step(states, actions, targets)
        self.steps += 1
        if self.steps % 200 == 0:
            self.target = self.network.copy()


def train(episodes: int = 60, seed: int = 0) -> QNetwork:
    """Train on random scenarios of the benchmark's grid (seeds the benchmark does not use) and save the weights."""
    from benchmarks.allocation_sim import CLUSTERS, RHOS, SIGMAS, grid_scenario, simulate_search

    rng = random.Random(seed)
    agent = DQNPolicy(QNetwork(seed), learning=True, epsilon=0.3, seed=seed)
    for episode in range(episodes):
        agent.epsilon = max(0.05, 0.3 * (1 - episode / episodes))
        agent.start_episode()
        chosen = grid_scenario(rng.choice(("regularized", "generational")), rng.choice(SIGMAS), rng.choice(RHOS))
        simulate_search(chosen, rng.choice(list(CLUSTERS.values())), "auto", seed=1000 + episode, policy=agent)
    WEIGHTS.parent.mkdir(parents=True, exist_ok=True)
    np.savez(WEIGHTS, **agent.network.params)
    return agent.network


def dqn_policy() -> DQNPolicy:
    """The trained agent, greedy (``train`` first if no weights were saved)."""
    network = QNetwork()
    if WEIGHTS.exists():
        saved = np.load(WEIGHTS)
        network.params = {key: saved[key] for key in network.params}
    return DQNPolicy(network)
