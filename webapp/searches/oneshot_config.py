"""The configuration of a one-shot (weight-sharing) search (``"kind": "oneshot"``, seed 003): one supernet holding
every candidate of the space is trained once, then a strategy searches its paths, each scored with the
supernet's weights instead of being trained, a ranking check says how far those scores can be trusted, and the
top paths are trained from scratch (``final``). :func:`webapp.searches.config.check_config` calls
:func:`check_oneshot_config` for this kind (:data:`KIND`), so the form, the JSON API and ``search create`` share it.

```
{"kind": "oneshot",
 "space": {"name": "cell", "nodes": 4},                  # a space a supernet can hold (nas.oneshot.support)
 "dataset": "digits",
 "training": {"epochs": 3, "batch_size": 64, ...},       # the stand-alone training: ranking check and final runs
 "oneshot": {"supernet": {"epochs": 20, "sampling": "uniform", "probes": 4, ...training fields},
             "strategy": {"name": "regularized", "seed": 0, "params": {...}},   # the search over paths
             "check_ranking": 20,                        # paths trained stand-alone for Kendall's tau (0: none)
             "check_repeats": 1,                         # stand-alone trainings per checked path (their mean)
             "check_score": "accuracy",                  # the supernet's side of the check (path_score's)
             "check_reference": "accuracy",              # the stand-alone side: accuracy or loss
             "path_score": "accuracy"},                  # what the path search's fitness is: accuracy or loss
 "final": {"top": 1, "epochs": 20},                      # retrain the best paths from scratch (optional)
 "evaluation": {"keep_weights": 5},                      # the files kept of the best final runs
 "pool": "eval", "notify": {"webhook": "https://..."}}
```
``oneshot.supernet`` takes every field of the training budget (``evaluators.budget``); those it leaves out are
the search's ``training``'s, except the seed, which is always the training's: the supernet, the path scores and
the stand-alone trainings then share one validation split. The check ranks paths by the supernet's validation
``check_score`` against the mean validation ``check_reference`` of ``check_repeats`` stand-alone trainings per
path (repeat ``r`` with training seed + ``r`` x 500, ``nas.oneshot.repeat_seed``); with ``path_score: "loss"``
a path's fitness is its negated supernet validation loss. No torch here.
"""
from __future__ import annotations

from typing import Any

from nas.oneshot.ranking import RANK_BY
from nas.oneshot.support import supernet_support
from webapp.searches.architecture_config import check_architecture_config, check_training
from webapp.searches.architecture_config import planned_evaluations as architecture_planned
from webapp.searches.checks import ConfigError
from webapp.searches.checks import choice as _choice
from webapp.searches.checks import number as _number
from webapp.searches.checks import section as _section
from webapp.searches.final_config import check_final
from webapp.searches.kinds import SearchKind

#: How a supernet's training picks the path of each step (Single Path One-Shot: uniformly).
SAMPLING = ("uniform",)
#: The path search's strategy parameters a configuration leaves out (scores are cheap: a larger search than an
#: evolutionary search's starter set).
STRATEGY_PARAMS: dict[str, int] = {"population": 16, "sample_size": 4, "max_evaluations": 100}
#: The supernet's training fields a configuration leaves out (one-shot supernets train longer than a candidate).
SUPERNET_DEFAULTS: dict[str, Any] = {"epochs": 20}
#: Paths per epoch whose accuracy draws the supernet's learning curve; paths of the ranking check.
PROBES = (4, 1, 64)
CHECK_RANKING = (0, 0, 500)
#: Stand-alone trainings per checked path (default, least, most): the check's reference is their mean.
CHECK_REPEATS = (1, 1, 5)
#: What the check ranks by on the supernet's side and the stand-alone side, and what a path's fitness is
#: (``check_score`` left out: ``path_score``'s, so the check measures the ranking the search uses).
CHECK_DEFAULTS: dict[str, str] = {"check_score": "accuracy", "check_reference": "accuracy", "path_score": "accuracy"}
FIELDS = ["kind", "space", "dataset", "data", "training", "oneshot", "final", "evaluation", "pool", "notify"]


def _moved(error: ConfigError, prefix: str, field: str) -> ConfigError:
    """``error`` of the architecture checker's ``prefix`` field named as this configuration's ``field``."""
    message = str(error).split(": ", 1)[-1]
    return ConfigError(field + error.field[len(prefix):], message.replace(f"{prefix}", field, 1)
                       if message.startswith(prefix) else message)


def check_oneshot_config(data: dict[str, Any]) -> dict[str, Any]:
    """A one-shot search's configuration with its defaults, or ``ConfigError`` naming the first bad field."""
    unknown = sorted(set(data) - set(FIELDS), key=str)
    if unknown:
        raise ConfigError(str(unknown[0])[:100], f"unknown field for a one-shot search; the fields are "
                                                 f"{', '.join(FIELDS)}")
    space = data.get("space", {"name": "cell"})
    if isinstance(space, dict):
        space = {"name": "cell", **space}
        reason = supernet_support(space["name"]) if isinstance(space["name"], str) else None
        if reason is not None:
            raise ConfigError("space.name", reason)
    oneshot = _section("oneshot", data.get("oneshot"), ["supernet", "strategy", "check_ranking", "check_repeats",
                                                        *CHECK_DEFAULTS])
    strategy = oneshot.get("strategy", {})
    if isinstance(strategy, dict):
        params = strategy.get("params", {})
        if isinstance(params, dict) and strategy.get("name", "regularized") == "regularized":
            strategy = {**strategy, "params": {**STRATEGY_PARAMS, **params}}
    evaluation = data.get("evaluation")
    if isinstance(evaluation, dict) and evaluation.get("mode", "train") != "train":
        raise ConfigError("evaluation.mode", f"a one-shot search trains: only 'train' (got {evaluation['mode']!r})")
    architecture = {name: data[name] for name in ("dataset", "data", "training", "evaluation", "pool", "notify")
                    if name in data}
    try:
        checked = check_architecture_config({**architecture, "space": space, "strategy": strategy})
    except ConfigError as error:
        if error.field.startswith("strategy"):
            raise _moved(error, "strategy", "oneshot.strategy") from None
        raise
    checked["kind"] = "oneshot"
    path_search = checked.pop("strategy")
    checked["oneshot"] = {"supernet": check_supernet(oneshot.get("supernet"), checked["training"]),
                          "strategy": path_search,
                          "check_ranking": _number("oneshot.check_ranking", oneshot.get("check_ranking", 0), int,
                                                   *CHECK_RANKING[1:]),
                          "check_repeats": _number("oneshot.check_repeats",
                                                   oneshot.get("check_repeats", CHECK_REPEATS[0]), int,
                                                   *CHECK_REPEATS[1:]),
                          **{name: _choice(f"oneshot.{name}", oneshot.get(name, default), RANK_BY)
                             for name, default in CHECK_DEFAULTS.items()}}
    if "check_score" not in oneshot:  # the check measures the score the path search ranks by
        checked["oneshot"]["check_score"] = checked["oneshot"]["path_score"]
    if checked["oneshot"]["check_ranking"] == 1:
        raise ConfigError("oneshot.check_ranking", "must be 0 (no check) or at least 2 paths (an interval needs 5)")
    if not planned_evaluations(checked):
        raise ConfigError("oneshot.strategy.params.max_evaluations", "the path search needs a budget: set "
                                                                     "max_evaluations (or generations)")
    final = check_final(data.get("final"), planned_evaluations(checked))
    if final is not None:
        checked["final"] = final
    return checked


def check_supernet(data: Any, training: dict[str, Any]) -> dict[str, Any]:
    """The supernet's training: every training field (the search's ``training`` where left out, the seed always
    the training's), its ``sampling`` rule and its ``probes`` per epoch."""
    data = _section("oneshot.supernet", data, [*training, "sampling", "probes"])
    if "seed" in data and data["seed"] != training["seed"]:
        raise ConfigError("oneshot.supernet.seed", "is the training's seed (training.seed): the supernet, the path "
                                                   "scores and the stand-alone trainings share one validation split")
    fields = {**training, **SUPERNET_DEFAULTS, **{k: v for k, v in data.items() if k not in ("sampling", "probes")}}
    try:
        budget = check_training(fields)
    except ConfigError as error:
        raise _moved(error, "training", "oneshot.supernet") from None
    return {**budget, "sampling": _choice("oneshot.supernet.sampling", data.get("sampling", SAMPLING[0]), SAMPLING),
            "probes": _number("oneshot.supernet.probes", data.get("probes", PROBES[0]), int, *PROBES[1:])}


def planned_evaluations(config: dict[str, Any]) -> int:
    """The paths the search plans to score at most (its strategy's budget): progress bars, and the number of the
    supernet's individual (the strategy numbers the paths 0, 1, 2 ... below it)."""
    return architecture_planned({"strategy": config["oneshot"]["strategy"]})


KIND = SearchKind(
    name="oneshot", label="one-shot search", check=check_oneshot_config, planned=planned_evaluations,
    architectures=True, create="oneshot-create",
    loop="webapp.control.oneshot_loop.OneShotLoop",
    page="webapp.dashboard.oneshot_pages.detail", form="webapp.dashboard.oneshot_form.edit",
    log="webapp.dashboard.downloads.architecture_log",
)
