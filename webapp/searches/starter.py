"""The defaults of a search nobody sized: one small set, defined here and read by everything that makes a search.

``check_config`` fills these into an architecture search's configuration where it leaves them out, so the form
(which shows them as its initial values), the JSON API (``POST /api/searches/ {"name": ...}``), ``search
create --name ...``, the configuration's docstring and the README's example all describe the same search: 24
evaluations of 3 epochs on digits, minutes on a CPU. The engine's own defaults (``nas``' strategies and spaces,
``evaluators.budget``) stay the library's; a search sized on purpose names its fields.
"""
from __future__ import annotations

import copy
from typing import Any

from nas.strategies import STRATEGIES

#: A search's name in the form before the user types one.
NAME = "digits search"
#: Strategy parameters, each filled in only for the strategies that take it and give it a default (the
#: generational strategies' budget stays "no limit": their ``generations`` bound them).
STRATEGY_PARAMS: dict[str, int] = {"population": 8, "sample_size": 3, "generations": 3, "max_evaluations": 24}
#: Space parameters by space (the others keep the space's defaults).
SPACE_PARAMS: dict[str, dict[str, Any]] = {"chain": {"max_layers": 6}}
#: The training budget's fields that differ from ``evaluators.budget``'s defaults (none today: 3 epochs).
TRAINING: dict[str, Any] = {}


def strategy_params(strategy: str) -> dict[str, int]:
    """The starter parameters ``strategy`` takes (a parameter it does not take, or whose default is "no limit",
    is left out)."""
    params = {p.name for p in STRATEGIES[strategy].PARAMS}
    defaults = STRATEGIES[strategy].default_params()
    return {name: value for name, value in STRATEGY_PARAMS.items()
            if name in params and defaults.get(name) is not None}


def fill(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (an architecture configuration, unchecked) with the starter values where it leaves them out;
    anything malformed is passed on unchanged for the checks to name."""
    data = copy.deepcopy(data)
    space = data.get("space", {})
    if isinstance(space, dict):
        name = space.get("name", "chain")
        starter = SPACE_PARAMS.get(name, {}) if isinstance(name, str) else {}  # a list or a dict: the check names it
        data["space"] = {**starter, **space}
    strategy = data.get("strategy", {})
    if isinstance(strategy, dict):
        name = strategy.get("name", "regularized")
        params = strategy.get("params", {})
        if isinstance(name, str) and name in STRATEGIES and isinstance(params, dict):
            data["strategy"] = {**strategy, "params": {**strategy_params(name), **params}}
    training = data.get("training", {})
    if TRAINING and isinstance(training, dict):
        data["training"] = {**TRAINING, **training}
    return data
