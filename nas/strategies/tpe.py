"""TPE (Bergstra et al. 2011): Bayesian optimisation with tree-structured Parzen estimators, seed 003's BO
explorer, through Optuna's ``TPESampler`` (a maintained library, not a rewrite).

**Why it lives in** ``nas`` **and imports Optuna lazily.** It is a strategy like any other: registered by name,
checked by the same contract, built by the web process to check a configuration, resumed from the same JSON
state. Only asking and telling need Optuna, so Optuna is imported inside the functions that do (:func:`_optuna`),
never when the module is: ``import nas`` still loads only the standard library and numpy (a plain script, the
web process), and ``tests/nas/test_purity.py`` allows this one module, and no other, that lazy import.

**How it drives Optuna.** An in-memory study inside the strategy, driven by ask and tell: each candidate is one
trial whose parameters are the space's decisions (``SearchSpace.compose`` asks them one by one, so a chain's
layers are conditional on its length, as Optuna's define-by-run expects): a range (``ordered``) as an integer
distribution, any other decision as a categorical one. Results arrive in any order; the ``constant_liar`` keeps
the trials still running from being proposed again nearby. A draw whose genome is known (asked before) or none of
the space (a cell cut off) is a *repeat*: told ``PRUNED``, as Optuna's FAQ advises for duplicates, so TPE counts
it among the bad trials and moves on (told ``FAIL``, it would be ignored and drawn again and again once TPE has
settled on its best). ``DUPLICATE_RETRIES`` repeats in a row end the search, as for every strategy.

**Exact resume.** The study is never saved: it is rebuilt from the strategy's archive (the candidates and results
the control loop stores as rows) and its repeats (an append-only list of their parameters, stored the same way):
one trial per draw, in the order drawn, complete, failed, pruned or still running as they were. What a draw
proposes depends only on those trials and on its random generator, and each draw gets a sampler of its own
seeded from ``(seed, draw number)`` (a counter-based stream, as the weight searches' noise), so nothing of the
samplers needs saving. A resumed strategy proposes exactly what the uninterrupted one would have (the strategies'
contract checks it, resuming at every other step).
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from nas.spaces.base import Decision, SearchSpace
from nas.strategies.archive import DUPLICATE_RETRIES, ArchiveStrategy, Param, Proposal
from nas.strategies.base import Candidate, Result
from nas.strategies.objectives import FITNESS, OBJECTIVES, check_objectives, first_front, oriented, values

#: TPE's cost per proposal grows with the trials it models (tens of milliseconds at a thousand): its budget is
#: bounded lower than the other strategies'.
MAX_TPE_EVALUATIONS = 10_000
MAX_EVALUATIONS = Param("max_evaluations", "int", "How many candidates to evaluate in all.", low=1,
                        high=MAX_TPE_EVALUATIONS, label="Evaluation budget")
STARTUP_TRIALS = Param("startup_trials", "int", "Results before TPE models the space: until then candidates are "
                       "random samples.", low=1, high=MAX_TPE_EVALUATIONS, label="Random start (results)")
EI_CANDIDATES = Param("ei_candidates", "int", "Samples from the good density scored by expected improvement for "
                      "each proposal.", low=1, high=1000, label="Candidates per proposal")


def _optuna() -> Any:
    """Optuna, imported on first use (see the module's docstring), without its INFO line per trial."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


class TPE(ArchiveStrategy):
    """Optuna's ``TPESampler`` over the space's decisions, asynchronous, seeded and exactly resumable.

    With several ``objectives`` it is Optuna's multi-objective TPE (MOTPE), and :meth:`best` is the first Pareto
    front, as for ``nsga2``. A failed result, or one without every objective, is a failed trial (ignored by
    TPE); a pruned one is complete with its predicted or partial fitness, a result like any other. Every candidate
    is a ``sample`` whose ``generation`` is the number of results told when it was proposed.

    Args:
        space: the space to search; it must have a decision view (every registered space has).
        seed: the seed of the strategy's random generator.
        objectives: ``[[name, "max" | "min"], ...]`` (default the fitness, maximised).
        startup_trials: results before TPE models the space (Optuna's ``n_startup_trials``, default 10).
        ei_candidates: samples scored per proposal (Optuna's ``n_ei_candidates``, default 24).
        max_evaluations: the budget (default 400, at most 10,000).
    """

    name = "tpe"
    #: The archive's lists and the repeats only grow (see :attr:`Strategy.APPEND_ONLY`).
    APPEND_ONLY: ClassVar[tuple[str, ...]] = ("candidates", "results", "repeats")
    PARAMS: ClassVar[tuple[Param, ...]] = (OBJECTIVES, STARTUP_TRIALS, EI_CANDIDATES, MAX_EVALUATIONS)
    BELIEFS = "densities"
    objectives: list[list[str]]
    startup_trials: int
    ei_candidates: int
    max_evaluations: int

    def __init__(
        self, space: SearchSpace, seed: int = 0, *, objectives: list[list[str]] | tuple = FITNESS,
        startup_trials: int = 10, ei_candidates: int = 24, max_evaluations: int = 400,
    ) -> None:
        super().__init__(space, seed, objectives=check_objectives(objectives), startup_trials=startup_trials,
                         ei_candidates=ei_candidates, max_evaluations=max_evaluations)
        self._decisions: dict[str, Decision] = {d.name: d for d in space.decisions()}
        #: The draws that repeated a known genome or made none: ``{"before": candidates asked before it,
        #: "params": its trial's parameters}``, in the order drawn.
        self._repeats: list[dict[str, Any]] = []
        self._study: Any = None  # built from the archive and the repeats when first needed
        self._trials: dict[int, int] = {}  # candidate id -> its trial's number (its draw's), while it runs

    def sort_key(self, result: Result) -> tuple[float, ...]:
        """The objectives oriented so that larger is better; ``-inf`` for a failure."""
        return oriented(result, self.objectives)

    def best(self, k: int | None = 1) -> list[tuple[Candidate, Result]]:
        """The ``k`` best (one objective), or the first Pareto front cut to ``k`` (several, as ``nsga2``)."""
        if len(self.objectives) == 1:
            return super().best(k)
        return first_front(super().best(None), self.objectives, k)

    # --- the study --------------------------------------------------------------------------------------------

    def _distributions(self, names: Any) -> dict[str, Any]:
        distributions = _optuna().distributions
        found = {}
        for name in names:
            choices = self._decisions[name].choices
            found[name] = (distributions.IntDistribution(choices[0], choices[-1]) if self._decisions[name].ordered
                           else distributions.CategoricalDistribution(choices))
        return found

    def _sampler(self, draw: int) -> Any:
        """Draw number ``draw``'s sampler: its seed comes from ``(seed, draw)`` alone."""
        seed = int(np.random.SeedSequence([self.seed, draw]).generate_state(1)[0])
        return _optuna().samplers.TPESampler(seed=seed, n_startup_trials=self.startup_trials,
                                             n_ei_candidates=self.ei_candidates, constant_liar=True)

    def _open(self) -> Any:
        """The study, rebuilt the first time: a trial per draw (candidates and repeats), in the order drawn."""
        if self._study is not None:
            return self._study
        optuna = _optuna()
        state = optuna.trial.TrialState
        directions = ["maximize" if direction == "max" else "minimize" for _, direction in self.objectives]
        study = optuna.create_study(directions=directions, sampler=self._sampler(self._draws()))
        trials, repeats = [], iter(self._repeats)
        repeat = next(repeats, None)
        for candidate in [*self._candidates, None]:
            while repeat is not None and (candidate is None or repeat["before"] <= candidate.id):
                params = repeat["params"]
                trials.append(optuna.trial.create_trial(params=params, distributions=self._distributions(params),
                                                        state=state.PRUNED))
                repeat = next(repeats, None)
            if candidate is None:
                break
            params = self.space.decompose(candidate.genome)
            result = self._results.get(candidate.id)
            found = None if result is None else values(result, self.objectives)
            self._trials[candidate.id] = len(trials)
            trials.append(optuna.trial.create_trial(
                params=params, distributions=self._distributions(params), values=found,
                state=state.RUNNING if result is None else state.FAIL if found is None else state.COMPLETE))
        study.add_trials(trials)
        self._trials = {cid: number for cid, number in self._trials.items() if cid not in self._results}
        self._study = study
        return study

    def _draws(self) -> int:
        return len(self._candidates) + len(self._repeats)

    def _suggest(self, trial: Any, decision: Decision) -> Any:
        if decision.ordered:
            return trial.suggest_int(decision.name, decision.choices[0], decision.choices[-1])
        return trial.suggest_categorical(decision.name, decision.choices)

    # --- ask / tell ---------------------------------------------------------------------------------------------

    def _propose(self) -> Proposal | None:
        study = self._open()
        for _ in range(DUPLICATE_RETRIES + 1):
            study.sampler = self._sampler(self._draws())
            trial = study.ask()
            genome = self.space.compose(lambda decision: self._suggest(trial, decision))
            if genome is not None and not self._known(self.space.key(genome)):
                self._trials[len(self._candidates)] = trial.number  # the id ``ask`` gives it next
                return self._proposal(genome, generation=len(self._results))
            self._repeats.append({"before": len(self._candidates), "params": dict(trial.params)})
            study.tell(trial, state=_optuna().trial.TrialState.PRUNED)
        self._exhausted = True
        return None

    def _on_tell(self, candidate: Candidate, result: Result) -> None:
        if self._study is None:
            return  # rebuilt from the archive, this result included, when next needed
        found = values(result, self.objectives)
        number = self._trials.pop(candidate.id)
        if found is None:
            self._study.tell(number, state=_optuna().trial.TrialState.FAIL)
        else:
            self._study.tell(number, found)

    # --- beliefs and state ----------------------------------------------------------------------------------------

    def beliefs(self) -> dict[str, Any]:
        """TPE's good and bad densities (``l(x)`` and ``g(x)``) as the next proposal would fit them, per decision:
        the probability of each choice under each (``modelled`` false while it still samples at random).

        They are read from Optuna's own split and estimators (``_split_trials``,
        ``TPESampler._build_parzen_estimator``: private helpers of the pinned version, so what the page shows is
        what the sampler uses; ``tests/nas/test_tpe.py`` checks them, so an upgrade that moves them fails there)."""
        optuna = _optuna()
        from optuna.samplers._tpe import sampler as tpe

        study, state = self._open(), optuna.trial.TrialState
        trials = study.get_trials(deepcopy=False, states=(state.COMPLETE, state.PRUNED, state.RUNNING))
        finished = sum(trial.state != state.RUNNING for trial in trials)
        beliefs: dict[str, Any] = {"kind": self.BELIEFS, "told": len(self._results), "modelled": False,
                                   "good": 0, "bad": 0, "decisions": []}
        if finished < self.startup_trials:
            return beliefs
        gamma = tpe.default_gamma if len(study.directions) == 1 else tpe.default_gamma_multiobjective
        below, above = tpe._split_trials(study, trials, gamma(finished))
        sampler = self._sampler(self._draws())
        for name, decision in self._decisions.items():
            space = self._distributions([name])
            points = {name: np.array([space[name].to_internal_repr(choice) for choice in decision.choices])}
            row: dict[str, Any] = {"name": name, "choices": list(decision.choices)}
            for label, group in (("good", below), ("bad", above)):
                estimator = sampler._build_parzen_estimator(study, space, group, handle_below=label == "good")
                density = np.exp(estimator.log_pdf(points))
                row[label] = [round(float(p), 4) for p in density / density.sum()]
            beliefs["decisions"].append(row)
        return {**beliefs, "modelled": True, "good": len(below), "bad": len(above)}

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "repeats": list(self._repeats)}

    @classmethod
    def from_state(cls, space: SearchSpace, state: dict[str, Any]) -> TPE:
        strategy = super().from_state(space, state)
        strategy._repeats = [dict(repeat) for repeat in state["repeats"]]
        return strategy
