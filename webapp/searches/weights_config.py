"""The configuration of a weight search (``"kind": "weights"``, seed 001): a network's weights evolved by an
evolution strategy over the evaluation workers. :func:`webapp.searches.config.check_config` calls
:func:`check_weights_config` for this kind (:data:`KIND`), so the form, the JSON API and ``search create --set``
share it.

```
{"kind": "weights",
 "network": {"kind": "mlp", "layers": [64, 32, 10]},   # or {"kind": "genome", "space": ..., "genome": ...}
                                                       # or {"kind": "best_of", "search": 12}: its best architecture
 "dataset": "digits",
 "weights": {"algorithm": "openai_es", "population": 64, "sigma": 0.05, "mirrored": true, "optimizer": "adam",
             "learning_rate": 0.03, "fitness": "loss", "batch_size": 256, "generations": 200, "method": "cu",
             "seed": 0},
 "pool": "eval",
 "notify": {"webhook": "https://..."}}                 # optional: webapp.searches.notify_config
```
The checked configuration also holds ``parameters``, the network's size (counted here, never taken as given).
``best_of`` is resolved here, once, into the genome and space of that search's best finished individual (kept
with ``source_search`` and ``source_individual``), so a later change to the source search never changes this one;
``start`` records whether that individual's trained weights were kept (``kept``: the search begins from them,
batch norm's statistics included) or not (``scratch``: from the seeded initialisation). No torch.
"""
from __future__ import annotations

from typing import Any

from evaluators.catalog import DATASETS
from evaluators.weights_network import NetworkError, check_network
from nas.neuroevolution import ALGORITHMS, METHODS, ESConfig
from webapp.searches.checks import ConfigError, check_pool
from webapp.searches.checks import choice as _choice
from webapp.searches.checks import number as _number
from webapp.searches.checks import section as _section
from webapp.searches.kinds import SearchKind, kind_of
from webapp.searches.notify_config import check_notify

OPTIMIZERS = ("adam", "sgd")
FITNESS = ("loss", "accuracy")
#: name -> (default, type, low, high); sigma and the learning rate must also be above 0 (checked below).
NUMBERS: dict[str, tuple[Any, type, float, float]] = {
    "population": (64, int, 2, 10_000),
    "sigma": (0.05, float, 0.0, 10.0),
    "learning_rate": (0.03, float, 0.0, 10.0),
    "batch_size": (256, int, 1, 65_536),
    "generations": (200, int, 1, 1_000_000),
    "seed": (0, int, 0, 2**31 - 1),
}
CHOICES: dict[str, tuple[str, ...]] = {
    "algorithm": ALGORITHMS, "optimizer": OPTIMIZERS, "fitness": FITNESS, "method": METHODS,
}
FIELDS = [*NUMBERS, *CHOICES, "mirrored"]
#: The defaults of a search that starts from trained weights (``best_of`` with kept weights): fine-tuning takes
#: smaller steps. Measured on a digits network trained to 0.964: the defaults above took it to 0.63, 0.42 and 0.37
#: validation accuracy in three generations; these kept it at 0.967 to 0.972 (population 16).
FINE_TUNING: dict[str, float] = {"sigma": 0.01, "learning_rate": 0.001}


def check_weights_config(data: dict[str, Any]) -> dict[str, Any]:
    """A weight search's configuration with its defaults, or ``ConfigError`` naming the first bad field."""
    # parameters: derived, recounted
    allowed = ["kind", "network", "dataset", "weights", "pool", "notify", "parameters"]
    unknown = sorted(set(data) - set(allowed), key=str)
    if unknown:
        raise ConfigError(str(unknown[0])[:100], f"unknown field for a weight search; the fields are "
                                                 f"{', '.join(allowed)}")
    dataset = _choice("dataset", data.get("dataset", "digits"), [name for name in DATASETS if name != "synthetic"])
    weights = _section("weights", data.get("weights"), FIELDS)
    network = resolve_network(data.get("network", {"kind": "mlp"}))
    defaults = {name: default for name, (default, *_) in NUMBERS.items()}
    if isinstance(network, dict) and network.get("start") == "kept":
        defaults.update(FINE_TUNING)
    checked: dict[str, Any] = {name: _number(f"weights.{name}", weights.get(name, defaults[name]), kind, low, high)
                               for name, (_, kind, low, high) in NUMBERS.items()}
    for name in ("sigma", "learning_rate"):
        if checked[name] <= 0:
            raise ConfigError(f"weights.{name}", f"must be greater than 0 (got {checked[name]!r})")
    for name, choices in CHOICES.items():
        checked[name] = _choice(f"weights.{name}", weights.get(name, choices[0]), choices)
    mirrored = weights.get("mirrored", True)
    if not isinstance(mirrored, bool):
        raise ConfigError("weights.mirrored", f"must be true or false (got {mirrored!r})")
    checked["mirrored"] = mirrored
    try:
        ESConfig(checked["algorithm"], checked["population"], checked["sigma"], mirrored, checked["seed"])
    except ValueError as error:
        raise ConfigError("weights.population", str(error)) from None
    try:
        network, parameters = check_network(network, dataset)
    except NetworkError as error:
        raise ConfigError(f"network.{error.field}", str(error)) from None
    return {"kind": "weights", "network": network, "dataset": dataset, "weights": checked,
            "parameters": parameters, "pool": check_pool(data.get("pool", "eval")),
            **check_notify(data.get("notify"))}


def resolve_network(network: Any) -> Any:
    """``{"kind": "best_of", "search": N}`` as the genome network of search N's best finished individual."""
    if not isinstance(network, dict) or network.get("kind") != "best_of":
        return network
    unknown = sorted(set(network) - {"kind", "search"})
    if unknown:
        raise ConfigError(f"network.{unknown[0]}", "unknown field; the fields are kind, search")
    number = network.get("search")
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise ConfigError("network.search", f"must be the number of an architecture search (got {number!r})")
    from webapp.searches.models import Individual, Search, Weights

    source = Search.objects.filter(pk=number).only("config").first()
    if source is None or not kind_of(source.config).architectures:
        raise ConfigError("network.search", f"there is no architecture search #{number}")
    best = (Individual.objects.filter(search_id=number, status=Individual.Status.DONE, fitness__isnull=False)
            .order_by("-fitness", "number").only("genome", "number").first())
    if best is None:
        raise ConfigError("network.search", f"search #{number} has no finished architecture yet")
    kept = Weights.objects.filter(individual=best).exists()
    return {"kind": "genome", "space": source.config["space"], "genome": best.genome, "source_search": number,
            "source_individual": best.number, "start": "kept" if kept else "scratch"}


def sources(config: dict[str, Any]) -> list[tuple[str, int]]:
    """The search whose best architecture this one starts from, if any, with its field (its owner must be
    allowed to see it)."""
    source = config.get("network", {}).get("source_search")
    return [] if source is None else [("network.search", source)]


def planned_evaluations(config: dict[str, Any]) -> int:
    """Every offspring of every generation."""
    return config["weights"]["generations"] * config["weights"]["population"]


KIND = SearchKind(
    name="weights", label="weight search", check=check_weights_config, planned=planned_evaluations,
    sources=sources, create="weights-create",
    loop="webapp.control.weights_loop.WeightLoop",
    page="webapp.dashboard.weights_pages.detail", form="webapp.dashboard.weights_form.edit",
    log="webapp.dashboard.weights_pages.generations_csv",
)
