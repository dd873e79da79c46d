"""A search's configuration: one JSON document, checked once when the search is created.

```
{"space": {"name": "chain", "max_layers": 6},            # nas.spaces.space_from_config
 "strategy": {"name": "regularized", "seed": 0, "params": {"population": 10, "max_evaluations": 30}},
 "dataset": "digits",                                    # digits | cifar10 | fashion_mnist | synthetic
 "training": {"epochs": 3, "batch_size": 64, ...},       # evaluators' TrainingBudget fields
 "evaluation": {"mode": "train", "keep_weights": 5},     # or {"mode": "simulated", "duration": 1.0, ...}
 "pool": "eval"}                                         # the worker queue that evaluates it
```
Every error names the field, the value and what is allowed. No torch here: the web server and the control
loop check configurations without loading PyTorch.
"""
from __future__ import annotations

import math
import re
from typing import Any

from nas.spaces import space_from_config, space_to_config
from nas.strategies import STRATEGIES, get_strategy

DATASETS = ("digits", "cifar10", "fashion_mnist", "synthetic")
OPTIMIZERS = ("adam", "adamw", "sgd")
PRECISIONS = ("fp32", "bf16")
DISTRIBUTIONS = ("fixed", "lognormal", "uniform")
POOL = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")

#: The training budget per individual: default, type, bounds. Defaults finish a digits search in minutes on a CPU.
TRAINING_FIELDS: dict[str, tuple[Any, type, float | None, float | None]] = {
    "epochs": (3, int, 1, 1000),
    "batch_size": (64, int, 1, 65536),
    "learning_rate": (1e-3, float, 0.0, None),
    "weight_decay": (0.0, float, 0.0, None),
    "max_seconds": (None, float, 0.0, None),
    "seed": (0, int, 0, None),
}
#: A trained evaluation: the trained weights of this many best individuals are kept (0: none).
TRAINED_FIELDS: dict[str, tuple[Any, type, float | None, float | None]] = {
    "keep_weights": (5, int, 0, 100),
}
#: Simulated evaluation (no training): its duration per individual and the faults it can inject (tests).
SIMULATED_FIELDS: dict[str, tuple[Any, type, float | None, float | None]] = {
    "duration": (1.0, float, 0.0, 86400.0),
    "sigma": (0.5, float, 0.0, 10.0),
}


class ConfigError(ValueError):
    """A bad configuration: ``field`` is the dotted path of the offending value (for form errors)."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")


def _number(section: str, name: str, value: Any, kind: type, low: float | None, high: float | None) -> Any:
    field = f"{section}.{name}"
    if value is None:
        raise ConfigError(field, "a value is required")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(field, f"must be a number (got {value!r})")
    if kind is int and not float(value).is_integer():
        raise ConfigError(field, f"must be an integer (got {value!r})")
    if not math.isfinite(value):
        raise ConfigError(field, f"must be finite (got {value!r})")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ConfigError(field, f"must be in {bounds} (got {value!r})")
    return kind(value)


def _fields(section: str, data: Any, fields: dict, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(section, f"must be an object (got {data!r})")
    unknown = sorted(set(data) - set(fields) - set(extra))
    if unknown:
        raise ConfigError(f"{section}.{unknown[0]}", f"unknown field; the fields are {', '.join([*fields, *extra])}")
    checked = {}
    for name, (default, kind, low, high) in fields.items():
        value = data.get(name, default)
        checked[name] = None if value is None and default is None else _number(section, name, value, kind, low, high)
    return checked


def _choice(field: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ConfigError(field, f"must be one of {', '.join(choices)} (got {value!r})")
    return value


def check_training(data: Any) -> dict[str, Any]:
    training = _fields("training", data, TRAINING_FIELDS, extra=("optimizer", "precision"))
    data = data or {}
    training["optimizer"] = _choice("training.optimizer", data.get("optimizer", "adam"), OPTIMIZERS)
    training["precision"] = _choice("training.precision", data.get("precision", "fp32"), PRECISIONS)
    return training


def check_evaluation(data: Any) -> dict[str, Any]:
    data = {"mode": "train"} if data is None else data
    if not isinstance(data, dict):
        raise ConfigError("evaluation", f"must be an object (got {data!r})")
    mode = _choice("evaluation.mode", data.get("mode", "train"), ("train", "simulated"))
    if mode == "train":
        return {"mode": mode, **_fields("evaluation", data, TRAINED_FIELDS, extra=("mode",))}
    rest = {k: v for k, v in data.items() if k not in ("mode", "distribution", "faults")}
    checked = {"mode": mode, **_fields("evaluation", rest, SIMULATED_FIELDS)}
    checked["distribution"] = _choice("evaluation.distribution", data.get("distribution", "fixed"), DISTRIBUTIONS)
    faults = data.get("faults", {})
    if not isinstance(faults, dict) or not all(
        isinstance(keys, list) and all(isinstance(k, str) for k in keys) for keys in faults.values()
    ):
        raise ConfigError("evaluation.faults", f"must map a fault to a list of genome keys (got {faults!r})")
    checked["faults"] = faults
    return checked


def check_config(data: Any) -> dict[str, Any]:
    """The configuration with every default filled in, or :class:`ConfigError` naming the first bad field."""
    if not isinstance(data, dict):
        raise ConfigError("config", f"must be an object (got {type(data).__name__})")
    allowed = {"space", "strategy", "dataset", "training", "evaluation", "pool"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(unknown[0], f"unknown field; the fields are {', '.join(sorted(allowed))}")
    space_data = data.get("space", {})
    if isinstance(space_data, dict):
        space_data = {"name": "chain", **space_data}  # a space or strategy named nowhere takes the default
    try:
        space = space_from_config(space_data)
    except ValueError as error:
        raise ConfigError("space", str(error)) from None
    strategy = data.get("strategy", {})
    if isinstance(strategy, dict):
        strategy = {"name": "regularized", **strategy}
    if not isinstance(strategy, dict) or strategy.get("name") not in STRATEGIES:
        name = strategy.get("name") if isinstance(strategy, dict) else strategy
        raise ConfigError("strategy.name", f"must be one of {', '.join(STRATEGIES)} (got {name!r})")
    seed = strategy.get("seed", 0)
    params = strategy.get("params", {})
    if not isinstance(params, dict):
        raise ConfigError("strategy.params", f"must be an object (got {params!r})")
    try:
        built = get_strategy(strategy["name"], space, seed, **params)
    except ValueError as error:
        field = _param_named(str(error), params)
        raise ConfigError(f"strategy.{field}", str(error)) from None
    pool = data.get("pool", "eval")
    if not isinstance(pool, str) or not POOL.match(pool):
        raise ConfigError("pool", f"must be a queue name of letters, digits, '.', '_' or '-' (got {pool!r})")
    return {
        "space": space_to_config(space),
        "strategy": {"name": strategy["name"], "seed": built.seed, "params": built.params},
        "dataset": _choice("dataset", data.get("dataset", "digits"), DATASETS),
        "training": check_training(data.get("training")),
        "evaluation": check_evaluation(data.get("evaluation")),
        "pool": pool,
    }


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
    budget = params.get("max_evaluations")
    generations = params.get("generations")
    by_generations = generations * params["population"] if generations and "population" in params else None
    options = [value for value in (budget, by_generations) if value]
    return min(options) if options else 0
