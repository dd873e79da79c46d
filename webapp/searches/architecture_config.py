"""The configuration of an architecture search (the kind ``architecture``, the default): one JSON document,
checked once when the search is created or edited (through :func:`webapp.searches.config.check_config`).

```
{"space": {"name": "chain", "max_layers": 6},            # nas.spaces.space_from_config
 "strategy": {"name": "regularized", "seed": 0, "params": {"population": 8, "sample_size": 3, "max_evaluations": 24}},
 "dataset": "digits",                                    # evaluators.catalog.DATASETS, or a registered set
 "data": {"input_size": 32, "validation_share": 0.2, "augment": false},   # registered sets only: data_config
 "training": {"epochs": 3, "batch_size": 64, ...},       # evaluators.budget.TrainingBudget
 "evaluation": {"mode": "train", "keep_weights": 5},     # or {"mode": "simulated", "duration": 1.0, ...}
 "pool": "eval",                                         # the evaluation queue: eval or eval.<name>
 "notify": {"webhook": "https://..."},                  # optional: webapp.searches.notify_config
 "final": {"top": 2, "epochs": 20}}                      # absent: none (webapp.searches.final_config)
```
The form, the JSON API and the ``search`` command all check it through ``check_config``. The values above are
what a configuration that leaves them out gets (``webapp.searches.starter``: one small set for all three). Each field's default, bounds and choices are defined once, beside what uses them: the
spaces' and strategies' parameters in ``nas`` (``Param``), the training budget in ``evaluators.budget``, the
datasets in ``evaluators.catalog``, the evaluation's here. Every field has an upper bound, so no request can
make a loop or a worker hold more than a search can use. Every error names the field, the value and what is
allowed. No torch here: the web server and the control loop check configurations without loading PyTorch.
"""
from __future__ import annotations

import re
from typing import Any

from evaluators import budget
from nas.spaces import space_from_config, space_to_config
from nas.strategies import STRATEGIES, get_strategy
from webapp.searches import pruner_config, starter
from webapp.searches.checks import ConfigError, check_pool
from webapp.searches.checks import choice as _choice
from webapp.searches.checks import fields as _fields
from webapp.searches.checks import number as _number
from webapp.searches.checks import section as _section
from webapp.searches.data_config import check_dataset
from webapp.searches.final_config import check_final
from webapp.searches.gang_config import check_gang_fields
from webapp.searches.notify_config import check_notify
from webapp.searches.kinds import SearchKind

DISTRIBUTIONS = ("fixed", "lognormal", "uniform")
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
#: ``evaluation.latency`` (off when absent): the inference schedule's latency measured after training.
LATENCY_FIELDS: dict[str, tuple[Any, type, float, float]] = {
    "batch": (1, int, 1, 1024),
    "repeats": (10, int, 1, 200),
}


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
            checked[name] = _number(f"training.{name}", value, rule.kind, rule.low, rule.high, rule.positive)
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
        data = _section("evaluation", data, ["mode", *TRAINED_FIELDS, "latency", "devices", "compression",
                                             "report_every"])
        return {"mode": mode, **_fields("evaluation", data, TRAINED_FIELDS), **check_latency(data.get("latency")),
                **_gangs(data, False)}
    data = _section("evaluation", data, ["mode", *SIMULATED_FIELDS, "distribution", "faults", "latency", "devices",
                                         "efficiency", "report_every", "curves"])
    checked = {"mode": mode, **_fields("evaluation", data, SIMULATED_FIELDS), **check_latency(data.get("latency")),
               **_gangs(data, True)}
    checked["distribution"] = _choice("evaluation.distribution", data.get("distribution", "fixed"), DISTRIBUTIONS)
    faults = data.get("faults", {})
    if not isinstance(faults, dict) or not all(
        isinstance(keys, list) and all(isinstance(k, str) and len(k) <= 64 for k in keys) for keys in faults.values()
    ) or sum(len(keys) for keys in faults.values()) > MAX_FAULT_KEYS:
        raise ConfigError("evaluation.faults", f"must map a fault to a list of genome keys, {MAX_FAULT_KEYS} at "
                                               f"most (got {str(faults)[:200]})")
    checked["faults"] = faults
    return checked


def check_latency(data: Any) -> dict[str, Any]:
    """``{"latency": {"batch", "repeats"}}`` when asked for (``true`` takes the defaults), else nothing."""
    if data is None or data is False:
        return {}
    data = {} if data is True else _section("evaluation.latency", data, list(LATENCY_FIELDS))
    return {"latency": _fields("evaluation.latency", data, LATENCY_FIELDS)}


def _check_objectives_measured(strategy: dict[str, Any], evaluation: dict[str, Any]) -> None:
    """An objective ``latency`` needs the evaluation to measure it."""
    names = [pair[0] for pair in strategy["params"].get("objectives", ()) if pair]
    if "latency" in names and "latency" not in evaluation:
        raise ConfigError("evaluation.latency", "the objective latency needs the latency measured: set "
                                                "evaluation.latency, e.g. {\"batch\": 1, \"repeats\": 10}")


def _gangs(data: dict[str, Any], simulated: bool) -> dict[str, Any]:
    """``evaluation.devices``, the trained ``evaluation.compression`` and the simulated ``evaluation.efficiency``
    (``webapp.searches.gang_config``)."""
    try:
        return check_gang_fields(data, simulated)
    except ValueError as error:
        text = str(error)
        if text.startswith("evaluation.compression "):
            raise ConfigError("evaluation.compression", text.removeprefix("evaluation.compression ")) from None
        field = "evaluation.efficiency" if "efficiency" in text else "evaluation.devices"
        raise ConfigError(field, text.replace("`evaluation.efficiency` ", "")) from None


def check_architecture_config(data: dict[str, Any]) -> dict[str, Any]:
    """The configuration with every default filled in, or :class:`ConfigError` naming the first bad field."""
    # "registered" is the server's (webapp.services.datasets.resolve_dataset), looked up again on every check
    data = starter.fill({key: value for key, value in data.items() if key not in ("kind", "registered")})
    allowed = ["data", "dataset", "evaluation", "final", "notify", "pool", "pruner", "space", "strategy", "training"]
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
        **check_dataset(data),
        "training": check_training(data.get("training")),
        "evaluation": check_evaluation(data.get("evaluation")),
        "pool": check_pool(data.get("pool", "eval")),
        **check_notify(data.get("notify")),
    }
    _check_objectives_measured(checked["strategy"], checked["evaluation"])
    final = check_final(data.get("final"), planned_evaluations(checked))
    if final is not None:
        checked["final"] = final
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


KIND = SearchKind(
    name="architecture", label="search", check=check_architecture_config, planned=planned_evaluations,
    architectures=True, create="search-create",
    loop="webapp.control.loop.SearchLoop",
    page="webapp.dashboard.pages.architecture_page", form="webapp.dashboard.architecture_form.edit",
    log="webapp.dashboard.downloads.architecture_log",
)
