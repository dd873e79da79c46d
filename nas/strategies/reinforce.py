"""REINFORCE (Williams 1992) over a space's decisions: the controller of Zoph & Le (2017) and ENAS (Pham et al.
2018), seed 003's RL explorer ("the agent generates a child, stores it, sends it to a free evaluator and
receives the reward").

The policy is one categorical distribution per decision of the space (``SearchSpace.decisions``: a softmax of
its logits), sampled decision by decision (``SearchSpace.compose``, so a chain's layers follow its sampled
length). It learns from each result as it arrives, with no generation to wait for:

    advantage = (reward - baseline) / spread
    logits[d] += policy_learning_rate * (advantage * (onehot(choice[d]) - p[d]) + entropy * dH/dlogits[d])

for every decision ``d`` the candidate took. The baseline is a moving average of the rewards (ENAS's), the
spread the moving root mean square of ``reward - baseline``, so one learning rate serves accuracies packed
within 0.95..0.98 and losses spread over 0..3 alike; the entropy bonus keeps the policy from collapsing on the
first good choices. A result told late was sampled by an older policy: its gradient is taken at the current
one, as asynchronous actor-critic methods do. Per-decision logits rather than ENAS's LSTM: the spaces here have
at most a few dozen decisions, and numpy keeps ``nas`` pure.
"""
from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from nas.spaces.base import Decision, SearchSpace
from nas.strategies.archive import DUPLICATE_RETRIES, MAX_EVALUATIONS, ArchiveStrategy, Param, Proposal
from nas.strategies.base import Candidate, Result
from nas.strategies.objectives import FITNESS, OBJECTIVES, check_objectives, values

POLICY_LEARNING_RATE = Param("policy_learning_rate", "float", "Step of the policy-gradient update made with each "
                      "result.", low=0.0, high=10.0, label="Policy learning rate")
ENTROPY = Param("entropy", "float", "Weight of the entropy bonus in each update: how strongly the policy keeps "
                "exploring.", low=0.0, high=1.0, label="Entropy bonus")
BASELINE_DECAY = Param("baseline_decay", "float", "Decay of the moving-average baseline the rewards are compared "
                       "with (closer to 1: a slower baseline).", low=0.0, high=0.999, label="Baseline decay")


def softmax(logits: np.ndarray) -> np.ndarray:
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def entropy_gradient(p: np.ndarray) -> np.ndarray:
    """d H / d logits of a softmax's entropy ``H = -sum p log p``: ``-p (log p + H)``."""
    logs = np.log(np.maximum(p, 1e-300))
    return -p * (logs - float(p @ logs))


class Reinforce(ArchiveStrategy):
    """A policy over the space's decisions, trained by policy gradient on each reward as it arrives.

    The reward is the one objective of ``objectives`` (the fitness by default; a ``min`` objective is negated).
    A failed result, or one without that objective, teaches nothing: the policy is left as it was. A pruned
    result's fitness (predicted or partial) is a reward like any other. A sample whose genome is known (asked
    before) or is none of the space (a cell cut off) is drawn again; a known one first moves the policy one
    entropy step (the bonus alone, no reward), so a policy settled on what it has already evaluated spreads out
    again instead of drawing it over and over (on the cell landscape it gave up after 129 of 150 evaluations
    without that). ``DUPLICATE_RETRIES`` such draws in a row end the search, as for every strategy. Every candidate is a ``sample`` whose ``generation`` is the number of
    updates the policy had made when it was drawn.

    Args:
        space: the space to search; it must have a decision view (every registered space has).
        seed: the seed of the strategy's random generator.
        objectives: ``[[name, "max" | "min"]]``, the reward: one objective only (default the fitness, maximised).
        policy_learning_rate: the step of each update (default 0.3; named apart from the training's
            ``learning_rate``, a field of the same form).
        entropy: the weight of the entropy bonus (default 0.05).
        baseline_decay: the decay of the moving-average baseline (default 0.9).
        max_evaluations: the budget (default 400).
    """

    name = "reinforce"
    PARAMS: ClassVar[tuple[Param, ...]] = (OBJECTIVES, POLICY_LEARNING_RATE, ENTROPY, BASELINE_DECAY, MAX_EVALUATIONS)
    BELIEFS = "policy"
    objectives: list[list[str]]
    policy_learning_rate: float
    entropy: float
    baseline_decay: float
    max_evaluations: int

    def __init__(
        self, space: SearchSpace, seed: int = 0, *, objectives: list[list[str]] | tuple = FITNESS,
        policy_learning_rate: float = 0.3, entropy: float = 0.05, baseline_decay: float = 0.9,
        max_evaluations: int = 400,
    ) -> None:
        if isinstance(objectives, (list, tuple)) and len(objectives) > 1:
            raise ValueError(
                f"`objectives`: reinforce learns from one reward, so it takes a single [name, \"max\" | \"min\"] pair "
                f"(objectives={str(objectives)[:200]}); for several objectives choose nsga2 or tpe."
            )
        super().__init__(space, seed, objectives=check_objectives(objectives, most=1),
                         policy_learning_rate=policy_learning_rate,
                         entropy=entropy, baseline_decay=baseline_decay, max_evaluations=max_evaluations)
        self._decisions: dict[str, Decision] = {d.name: d for d in space.decisions()}
        self._logits = {name: np.zeros(len(d.choices)) for name, d in self._decisions.items()}
        self._baseline: float | None = None
        self._spread = 0.0  # moving mean of (reward - baseline)^2
        self._updates = 0

    def probabilities(self) -> dict[str, list[float]]:
        """The policy now: each decision's probability per choice, in the order of its choices."""
        return {name: softmax(logits).tolist() for name, logits in self._logits.items()}

    def beliefs(self) -> dict[str, Any]:
        """The policy's probabilities per decision and choice, the baseline, and how many results it learnt from."""
        return {
            "kind": self.BELIEFS, "told": len(self._results), "updates": self._updates, "baseline": self._baseline,
            "decisions": [{"name": name, "choices": list(decision.choices),
                           "probabilities": [round(p, 4) for p in softmax(self._logits[name]).tolist()]}
                          for name, decision in self._decisions.items()],
        }

    # --- ask ------------------------------------------------------------------------------------------------

    def _choose(self, decision: Decision) -> Any:
        cumulative = np.cumsum(softmax(self._logits[decision.name]))
        index = int(np.searchsorted(cumulative, self._rng.random() * cumulative[-1], side="right"))
        return decision.choices[min(index, len(decision.choices) - 1)]

    def _propose(self) -> Proposal | None:
        for _ in range(DUPLICATE_RETRIES + 1):
            genome = self.space.compose(self._choose)
            if genome is not None and not self._known(self.space.key(genome)):
                return self._proposal(genome, generation=self._updates)
            if genome is not None:  # a repeat: the policy has settled on what it knows; explore a step more
                for name in self.space.decompose(genome):
                    self._logits[name] += self.policy_learning_rate * self.entropy * entropy_gradient(
                        softmax(self._logits[name]))
        self._exhausted = True
        return None

    # --- tell -----------------------------------------------------------------------------------------------

    def _on_tell(self, candidate: Candidate, result: Result) -> None:
        found = values(result, self.objectives)
        if found is None:
            return
        reward = found[0] if self.objectives[0][1] == "max" else -found[0]
        if self._baseline is None:  # the first reward is the baseline: nothing to compare it with yet
            self._baseline = reward
        delta = reward - self._baseline
        decay = self.baseline_decay
        self._spread = decay * self._spread + (1 - decay) * delta * delta
        advantage = delta / math.sqrt(self._spread) if self._spread > 0 else 0.0
        for name, choice in self.space.decompose(candidate.genome).items():
            logits = self._logits[name]
            p = softmax(logits)
            step = -p
            step[self._decisions[name].choices.index(choice)] += 1.0
            logits += self.policy_learning_rate * (advantage * step + self.entropy * entropy_gradient(p))
        self._baseline += (1 - decay) * delta
        self._updates += 1

    # --- state ----------------------------------------------------------------------------------------------

    def _extra_state(self) -> dict[str, Any]:
        return {"logits": {name: logits.tolist() for name, logits in self._logits.items()},
                "baseline": self._baseline, "spread": self._spread, "updates": self._updates}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self._logits = {name: np.array(state["logits"][name], dtype=float) for name in self._decisions}
        self._baseline, self._spread, self._updates = state["baseline"], state["spread"], state["updates"]
