"""Early stopping in the control loop (seed 003's central explorer decides): the search's pruner is fed every
``progress`` message, and when it says stop, the loop sets the individual's stop key in Redis
(``transport.request_prune``); the worker reads it after its next report and returns a ``pruned`` result.

- The pruner (``nas.pruners``) is built from the configuration's ``pruner`` and the training budget (its
  ``max_steps`` is the budget's epochs; its seed the strategy's), and its state is saved beside the strategy's
  (``strategy_store.PRUNER``) in the same transaction as the messages it saw, so a resumed search decides
  exactly as the uninterrupted one.
- A pruned result is told to the strategy as ``Result(pruned=True)`` whose fitness is the pruner's prediction
  when it made one (``curve``), else the accuracy observed when it stopped (``median``, ``asha``).
- A stop request for an individual that already finished changes nothing (its result is final; the key
  expires); a lost ``progress`` message only means one point fewer (results never wait for progress).
- What pruning saved is counted in ``search.stats["pruning"]``: epochs trained against the full budget, how
  many were pruned, and the audit's false-stop measure.
"""
from __future__ import annotations

import logging
from typing import Any

from evaluators.result import EvaluationResult
from nas.pruners import Decision, Pruner, get_pruner, pruner_from_state
from nas.strategies import Result
from webapp.control.strategy_store import PRUNER
from webapp.messaging import messages, transport
from webapp.searches.models import Individual, Search

log = logging.getLogger(__name__)
#: The progress metric a pruner watches: the validation accuracy, which is what a trained fitness is.
METRIC = "val_accuracy"
#: Objectives known before training ends (sent with every progress report): exact in multi-objective pruning.
KNOWN_BEFORE_TRAINING = ("params", "flops")


def build(config: dict[str, Any]) -> Pruner:
    """A new pruner for a checked search configuration."""
    pruner = dict(config.get("pruner") or {"name": "none"})
    name = pruner.pop("name", "none")
    strategy = config["strategy"] if "strategy" in config else config["oneshot"]["strategy"]  # a one-shot search's
    objectives = strategy["params"].get("objectives") or []
    multi = strategy["name"] == "nsga2" or len(objectives) > 1  # a front is sought (nsga2, tpe with several)
    if name == "curve" and multi and pruner.get("known_objectives") is None:
        known = [pair for pair in objectives if pair[0] in KNOWN_BEFORE_TRAINING]
        pruner["known_objectives"] = known or None
    if name == "curve" and pruner.get("upper") is None:
        pruner["upper"] = 1.0  # the watched metric is an accuracy
    return get_pruner(name, int(strategy.get("seed", 0)), "max", float(config["training"]["epochs"]), **pruner)


class Pruning:
    """The loop's side of early stopping for one search."""

    def __init__(self, search: Search) -> None:
        self.search_id = search.pk
        saved = (search.strategy_state or {}).get(PRUNER)
        self.pruner = pruner_from_state(saved) if saved else build(search.config)
        self.active = self.pruner.name != "none"
        self.dirty = False

    def progress(self, individual: Individual, message: messages.Progress) -> Decision | None:
        """Feed one report to the pruner; a stop is requested of the worker at once. ``None``: nothing to say."""
        value = message.metrics.get(METRIC)
        if not self.active or value is None or individual.status in Individual.FINAL:
            return None
        self.pruner.know(individual.number, message.metrics)
        self.pruner.report(individual.number, message.epoch, value)
        decision = self.pruner.should_stop(individual.number)
        self.dirty = True
        if decision.stop:
            transport.request_prune(self.search_id, individual.pk)
        if decision.stop or decision.audited or decision.predicted is not None:
            individual.prune = {**decision.to_dict(), "epoch": message.epoch}
            individual.predicted_fitness = decision.predicted
            individual.save(update_fields=["prune", "predicted_fitness"])
        return decision

    def result(self, search: Search, individual: Individual, payload: EvaluationResult | None,
               result: Result) -> Result:
        """The strategy's view of a recorded result, after the pruner learnt how it ended; counts the savings."""
        if not self.active:
            return result
        number = individual.number
        if result.pruned:
            decision = self.pruner.stopped(number)
            predicted = decision.predicted if decision is not None else None
            self.pruner.complete(number, None)
            if predicted is not None:
                result = Result(fitness=predicted, objectives=result.objectives, pruned=True)
        else:
            self.pruner.complete(number, payload.fitness if result.ok and payload is not None else None)
        self.dirty = True
        full = self.pruner.max_steps
        stats = search.stats.setdefault("pruning", {"pruner": self.pruner.name, "epochs_trained": 0.0,
                                                    "epochs_budget": 0.0, "pruned": 0})
        if result.ok:
            stats["epochs_trained"] += min(float(individual.epochs_trained or full), full)
            stats["epochs_budget"] += full
            stats["pruned"] += int(result.pruned)
        stats["audit"] = self.pruner.audit_report()
        return result

    def save(self, search: Search) -> None:
        """Save the pruner's state beside the strategy's (inside the caller's fenced transaction)."""
        if not self.dirty or search.strategy_state is None:
            return
        search.strategy_state = {**search.strategy_state, PRUNER: self.pruner.state_dict()}
        search.save(update_fields=["strategy_state", "stats"])
        self.dirty = False

