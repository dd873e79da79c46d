"""A search's ``dataset`` and, for a registered set, its ``data`` section:

```
"dataset": "parts",                                               # a built-in's name, or a registered set's
"data": {"input_size": 32, "validation_share": 0.2, "augment": false,  # registered sets only
         "test": "parts_test"}                                    # optional: a held-out registered set
```
``input_size``: the side of the square the images are fitted to (resized so the shorter side is that, then
centre cropped); ``validation_share``: the share of each class held out for validation, drawn by the training
seed; ``augment``: random crops (padding of an eighth of the side) and horizontal flips while training;
``test``: a registered set with the same class names and channels, held out: the search never trains, validates
or ranks on it; each trained network is scored on it once, after training (``held_out_accuracy``, a metric no
strategy sees), and the Best zip's README states the best's figure, which its ``predict.py`` reproduces. A
built-in set trains at its own size and split and takes no ``data`` section. Whether a registered name exists
and may be used by the search's owner is checked by ``webapp.services.datasets.resolve_dataset`` (it needs the
owner); what it adds (``registered``: path, digest, classes) never comes from a client. No torch here.
"""
from __future__ import annotations

from typing import Any

from evaluators.catalog import DATASETS
from webapp.searches.checks import ConfigError, fields, section, shown

#: name -> (default, type, low, high)
DATA_FIELDS: dict[str, tuple[Any, type, float, float]] = {
    "input_size": (32, int, 4, 256),
    "validation_share": (0.2, float, 0.05, 0.5),
}


def check_dataset(data: dict[str, Any]) -> dict[str, Any]:
    """``{"dataset": name}`` for a built-in, ``{"dataset": name, "data": {...}}`` with the defaults filled in
    for any other name (resolved later against the registered sets)."""
    name = data.get("dataset", "digits")
    if not isinstance(name, str) or not name or len(name) > 64:
        raise ConfigError("dataset", f"must be a built-in data set ({', '.join(DATASETS)}) or a registered one's "
                                     f"name (got {shown(name)})")
    if name in DATASETS:
        if data.get("data") is not None:
            raise ConfigError("data", f"applies to registered data sets only; {name} trains at its own size and "
                                      f"split")
        return {"dataset": name}
    settings = section("data", data.get("data"), [*DATA_FIELDS, "augment", "test"])
    checked = fields("data", settings, DATA_FIELDS)
    augment = settings.get("augment", False)
    if not isinstance(augment, bool):
        raise ConfigError("data.augment", f"must be true or false (got {shown(augment)})")
    test = settings.get("test")
    if test is not None and (not isinstance(test, str) or not test or len(test) > 64 or test == name):
        raise ConfigError("data.test", f"must be another registered data set's name, held out (got {shown(test)})")
    return {"dataset": name, "data": {**checked, "augment": augment, **({"test": test} if test else {})}}


def dataset_argument(config: dict[str, Any]) -> str | dict[str, Any]:
    """What an evaluation is told to train on (``evaluators.catalog``): a built-in's name, or the registered
    set's description (its record and the search's ``data`` settings)."""
    if "registered" in config:
        return {**config["registered"], **config["data"]}
    return config["dataset"]
