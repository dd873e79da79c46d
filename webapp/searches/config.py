"""A search's configuration: one JSON document, checked once when the search is created or edited. This is the
one place a configuration is checked: the form, the JSON API and the ``search`` command all call
:func:`check_config`, which hands it to its kind's checker (``webapp.searches.kinds``; ``architecture`` when it
names none). Every error names the field, the value and what is allowed. No torch here.
"""
from __future__ import annotations

from typing import Any

from evaluators.catalog import unavailable
from webapp.searches.checks import ConfigError, choice
from webapp.searches.data_config import dataset_argument
from webapp.searches.kinds import DEFAULT, kind_of, kinds

__all__ = ["ConfigError", "check_config", "check_dataset_installed", "check_sources_visible", "planned_evaluations"]


def check_config(data: Any) -> dict[str, Any]:
    """The configuration with every default filled in, or :class:`ConfigError` naming the first bad field."""
    if not isinstance(data, dict):
        raise ConfigError("config", f"must be an object (got {type(data).__name__})")
    name = choice("kind", data.get("kind", DEFAULT), list(kinds()))
    return kinds()[name].check(data)


def planned_evaluations(config: dict[str, Any]) -> int:
    """How many evaluations a checked configuration plans, for progress bars."""
    return kind_of(config).planned(config)


def check_sources_visible(config: dict[str, Any], visible: Any) -> None:
    """A search may read another search (a weight search starts from one's best architecture) only if its owner
    may see it (``visible``: that owner's queryset of searches); ``ConfigError`` as if it did not exist."""
    for field, source in kind_of(config).sources(config):
        if not visible.filter(pk=source).exists():
            raise ConfigError(field, f"there is no architecture search #{source}")


def check_dataset_installed(config: dict[str, Any]) -> None:
    """``ConfigError`` on ``dataset`` when a checked configuration trains on a dataset whose files are not in
    ``NAS_DATA_DIR`` here and ``NAS_DATA_DOWNLOAD`` does not allow a download (every individual would fail with
    ``DatasetMissing``). A file-presence check (``evaluators.catalog.unavailable``): no torch, no data read.
    Simulated evaluations load no data, so they pass."""
    if config.get("evaluation", {}).get("mode") == "simulated":
        return
    problem = unavailable(dataset_argument(config))
    if problem is not None:
        raise ConfigError("dataset", problem)
