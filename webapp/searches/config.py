"""A search's configuration: one JSON document, checked once when the search is created or edited.

```
{"space": {"name": "chain", "max_layers": 6},            # nas.spaces.space_from_config
 "strategy": {"name": "regularized", "seed": 0, "params": {"population": 10, "max_evaluations": 30}},
 "dataset": "digits",                                    # evaluators.catalog.DATASETS
 "training": {"epochs": 3, "batch_size": 64, ...},       # evaluators.budget.TrainingBudget
 "evaluation": {"mode": "train", "keep_weights": 5},     # or {"mode": "simulated", "duration": 1.0, ...}
 "pool": "eval"}                                         # the evaluation queue: eval or eval.<name>
```
This is the one place a configuration is checked: the form, the JSON API and the ``search`` command all call
:func:`check_config`. Each field's default, bounds and choices are defined once, beside what uses them: the
spaces' and strategies' parameters in ``nas`` (``Param``), the training budget in ``evaluators.budget``, the
datasets in ``evaluators.catalog``, the evaluation's here. Every field has an upper bound, so no request can
make a loop or a worker hold more than a search can use. Every error names the field, the value and what is
allowed. No torch here: the web server and the control loop check configurations without loading PyTorch.
"""
from __future__ import annotations

import math
import re
from typing import Any

from evaluators import budget
from evaluators.catalog import DATASETS
from nas.spaces import space_from_config, space_to_config
from nas.strategies import STRATEGIES, get_strategy
from webapp.searches import pruner_config

DISTRIBUTIONS = ("fixed", "lognormal", "uniform")
#: Evaluation pools are the queues evaluation workers serve: ``eval`` or ``eval.<name>`` (never ``control``).
POOL = re.compile(r"^eval(\.[A-Za-z0-9_-][A-Za-z0-9_.-]{0,94})?$")
POOL_RULE = "eval, or eval.<name> with letters, digits, '.', '_' or '-' (an evaluation pool, never control)"
#: The most fault keys a simulated evaluation may list (tests inject a handful).
MAX_FAULT_KEYS = 1000

#: A trained evaluation: the files of this many best individuals are kept (0: none). name -> (default, type, low, high)
TRAINED_FIELDS: dict[str, tuple[Any, type, float, float]] = {
    "keep_weights": (5, int, 0, 100),
}
#: Simulated evaluation (no training): its duration per individual and the faults it can inject (tests).
SIMULATED_FIELDS: dict[str, tuple[Any, type, float, float]] = {
    "duration": (1.0, float, 0.0, 86400.0),
    "sigma": (0.5, float, 0.0, 10.0),
}


class ConfigError(ValueError):
    """A bad configuration: ``field`` is the dotted path of the offending value (for form errors)."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")


def _number(field: str, value: Any, kind: type, low: float, high: float) -> Any:
    if value is None:
        raise ConfigError(field, "a value is required")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(field, f"must be a number (got {value!r})")
    if kind is int and not float(value).is_integer():
        raise ConfigError(field, f"must be an integer (got {value!r})")
    if not math.isfinite(value):
        raise ConfigError(field, f"must be finite (got {value!r})")
    if not low <= value <= high:
        raise ConfigError(field, f"must be in [{low}, {high}] (got {value!r})")
    return kind(value)


def _section(section: str, data: Any, names: list[str]) -> dict[str, Any]:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(section, f"must be an object (got {data!r})")
    unknown = sorted(set(data) - set(names), key=str)
    if unknown:
        raise ConfigError(f"{section}.{unknown[0]}", f"unknown field; the fields are {', '.join(names)}")
    return data


def _fields(section: str, data: dict[str, Any], fields: dict[str, tuple[Any, type, float, float]]) -> dict[str, Any]:
    return {name: _number(f"{section}.{name}", data.get(name, default), kind, low, high)
            for name, (default, kind, low, high) in fields.items()}


def _choice(field: str, value: Any, choices: tuple[str, ...] | list[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(field, f"must be one of {', '.join(choices)} (got {value!r})")
    return value


def check_training(data: Any) -> dict[str, Any]:
    """The training budget with its defaults filled in (``evaluators.budget`` defines every field)."""
    rules = budget.rules()
    data = _section("training", data, list(rules))
    checked = {}
    for name, rule in rules.items():
        value = data.get(name, budget.defaults()[name])
        if rule.choices:
            checked[name] = _choice(f"training.{name}", value, rule.choices)
        elif value is None and rule.optional:
            checked[name] = None
        else:
            checked[name] = _number(f"training.{name}", value, rule.kind, rule.low, rule.high)
    return checked


def check_evaluation(data: Any) -> dict[str, Any]:
    checked = _check_evaluation(data)
    try:  # early stopping's fields (webapp.searches.pruner_config), present only when set
        if isinstance(data, dict) and data.get("report_every") is not None:
            checked["report_every"] = pruner_config.check_report_every(data["report_every"])
        if checked["mode"] == "simulated" and isinstance(data, dict) and "curves" in data:
            checked["curves"] = pruner_config.check_curves(data["curves"])
    except pruner_config.PrunerConfigError as error:
        raise ConfigError(error.field, error.message) from None
    return checked


def _check_evaluation(data: Any) -> dict[str, Any]:
    data = {"mode": "train"} if data is None else data
    if not isinstance(data, dict):
        raise ConfigError("evaluation", f"must be an object (got {data!r})")
    mode = _choice("evaluation.mode", data.get("mode", "train"), ("train", "simulated"))
    if mode == "train":
        data = _section("evaluation", data, ["mode", *TRAINED_FIELDS, "report_every"])
        return {"mode": mode, **_fields("evaluation", data, TRAINED_FIELDS)}
    data = _section("evaluation", data, ["mode", *SIMULATED_FIELDS, "distribution", "faults", "report_every", "curves"])
    checked = {"mode": mode, **_fields("evaluation", data, SIMULATED_FIELDS)}
    checked["distribution"] = _choice("evaluation.distribution", data.get("distribution", "fixed"), DISTRIBUTIONS)
    faults = data.get("faults", {})
    if not isinstance(faults, dict) or not all(
        isinstance(keys, list) and all(isinstance(k, str) and len(k) <= 64 for k in keys) for keys in faults.values()
    ) or sum(len(keys) for keys in faults.values()) > MAX_FAULT_KEYS:
        raise ConfigError("evaluation.faults", f"must map a fault to a list of genome keys, {MAX_FAULT_KEYS} at "
                                               f"most (got {str(faults)[:200]})")
    checked["faults"] = faults
    return checked


def check_pool(value: Any) -> str:
    if not isinstance(value, str) or not POOL.match(value):
        raise ConfigError("pool", f"must be {POOL_RULE} (got {value!r})")
    return value


def check_config(data: Any) -> dict[str, Any]:
    """The configuration with every default filled in, or :class:`ConfigError` naming the first bad field."""
    if not isinstance(data, dict):
        raise ConfigError("config", f"must be an object (got {type(data).__name__})")
    allowed = ["dataset", "evaluation", "pool", "pruner", "space", "strategy", "training"]
    unknown = sorted(set(data) - set(allowed), key=str)
    if unknown:
        raise ConfigError(str(unknown[0])[:100], f"unknown field; the fields are {', '.join(allowed)}")
    space_data = data.get("space", {})
    if isinstance(space_data, dict):
        space_data = {"name": "chain", **space_data}  # a space or strategy named nowhere takes the default
    try:
        space = space_from_config(space_data)
    except (TypeError, ValueError) as error:
        raise ConfigError("space", str(error)) from None
    strategy = data.get("strategy", {})
    if isinstance(strategy, dict):
        strategy = {"name": "regularized", **strategy}
    name = strategy.get("name") if isinstance(strategy, dict) else strategy
    if not isinstance(name, str) or name not in STRATEGIES:
        raise ConfigError("strategy.name", f"must be one of {', '.join(STRATEGIES)} (got {name!r})")
    _section("strategy", strategy, ["name", "seed", "params"])
    params = strategy.get("params", {})
    if not isinstance(params, dict):
        raise ConfigError("strategy.params", f"must be an object (got {params!r})")
    try:
        built = get_strategy(name, space, strategy.get("seed", 0), **params)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"strategy.{_param_named(str(error), params)}", str(error)) from None
    checked = {
        "space": space_to_config(space),
        "strategy": {"name": name, "seed": built.seed, "params": built.params},
        "dataset": _choice("dataset", data.get("dataset", "digits"), list(DATASETS)),
        "training": check_training(data.get("training")),
        "evaluation": check_evaluation(data.get("evaluation")),
        "pool": check_pool(data.get("pool", "eval")),
    }
    try:
        pruner = pruner_config.check_pruner(data.get("pruner"), checked["training"]["epochs"])
    except pruner_config.PrunerConfigError as error:
        raise ConfigError(error.field, error.message) from None
    return {**checked, "pruner": pruner} if pruner is not None else checked


def _param_named(message: str, params: dict[str, Any]) -> str:
    """The parameter a strategy's error message is about (``seed`` or ``params.NAME``), for a form error."""
    found = re.search(r"`(\w+)`", message)
    if not found:
        return "params"
    name = found.group(1)
    return "seed" if name == "seed" else f"params.{name}"


def planned_evaluations(config: dict[str, Any]) -> int:
    """How many evaluations the search plans, for progress bars (generations x population when unbounded)."""
    params = config["strategy"]["params"]
    limit = params.get("max_evaluations")
    generations = params.get("generations")
    by_generations = generations * params["population"] if generations and "population" in params else None
    options = [value for value in (limit, by_generations) if value]
    return min(options) if options else 0
