"""Search strategies by name: ``get_strategy("regularized", space, seed=1, population=50)``.

Every strategy asks for candidates and learns from their results (:mod:`nas.strategies.base`), keeps its whole
state as JSON (``state_dict`` / :func:`strategy_from_state`), and describes its parameters for a form
(``describe_params()``).
"""
from __future__ import annotations

from typing import Any

from nas.spaces.base import SearchSpace
from nas.strategies.archive import ArchiveStrategy, Param
from nas.strategies.base import OPERATORS, Candidate, Result, Strategy
from nas.strategies.generational import GenerationalGA
from nas.strategies.nsga2 import NSGA2
from nas.strategies.random_search import RandomSearch
from nas.strategies.regularized import RegularizedEvolution
from nas.strategies.reinforce import Reinforce
from nas.strategies.tpe import TPE

#: Every registered strategy, by its ``name``.
STRATEGIES: dict[str, type[ArchiveStrategy]] = {
    cls.name: cls for cls in (RandomSearch, GenerationalGA, RegularizedEvolution, NSGA2, Reinforce, TPE)
}

__all__ = [
    "NSGA2",
    "OPERATORS",
    "STRATEGIES",
    "ArchiveStrategy",
    "Candidate",
    "GenerationalGA",
    "Param",
    "RandomSearch",
    "RegularizedEvolution",
    "Reinforce",
    "Result",
    "Strategy",
    "TPE",
    "get_strategy",
    "strategy_from_state",
]


def _lookup(name: Any) -> type[ArchiveStrategy]:
    if name not in STRATEGIES:
        raise ValueError(f"Unknown strategy {name!r}; the known strategies are {', '.join(STRATEGIES)}.")
    return STRATEGIES[name]


def get_strategy(name: str, space: SearchSpace, seed: int = 0, **params: Any) -> ArchiveStrategy:
    """The strategy registered as ``name`` over ``space``, seeded with ``seed`` and built with ``params``.

    Raises ``ValueError`` for an unknown name (listing the known ones), an unknown parameter (listing the
    strategy's parameters) or a bad value (naming the parameter, the value and the allowed range).
    """
    cls = _lookup(name)
    cls.check_params(params)  # an unknown name is a ValueError here, not the constructor's TypeError
    return cls(space, seed, **params)


def strategy_from_state(space: SearchSpace, state: dict[str, Any]) -> ArchiveStrategy:
    """The strategy that saved ``state`` (its ``state_dict()``), continuing where it stopped."""
    if not isinstance(state, dict):
        raise ValueError(f"A strategy state must be a dict with a `name` (state={state!r}).")
    return _lookup(state.get("name")).from_state(space, state)
