"""What a search *is*: one registry of search kinds, found by the configuration's ``kind``.

Each kind is one module named in :data:`KIND_MODULES` that defines ``KIND``, a :class:`SearchKind`: its
configuration checker and planned evaluations (here, in the searches room), and, by dotted path, its parts in the
other rooms: the control loop (a ``webapp.control.shell.LoopShell``; imported only by the control worker, so a
kind's loop may load PyTorch), its page and draft form (views taking ``(request, search)``), its log download
(a view taking ``search``), and the URL name of its creation form. Everything that differs between kinds is read
from here: the configuration checks, the control task, the pages, the forms and the downloads. To add a kind,
write its module and name it below.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Callable
from typing import Any

#: The modules that define a kind each (``KIND``), in the order the pages list them.
KIND_MODULES = ("webapp.searches.architecture_config", "webapp.searches.weights_config",
                "webapp.searches.oneshot_config")
#: The kind of a configuration that names none (every configuration written before kinds existed).
DEFAULT = "architecture"


def _none(config: dict[str, Any]) -> list[tuple[str, int]]:
    return []


@dataclasses.dataclass(frozen=True)
class SearchKind:
    """One kind of search and where each of its parts lives."""

    name: str  #: the configuration's ``kind``
    label: str  #: what the pages call it ("weight search")
    check: Callable[[dict[str, Any]], dict[str, Any]]  #: the configuration with its defaults, or ``ConfigError``
    planned: Callable[[dict[str, Any]], int]  #: evaluations planned (progress bars)
    loop: str  #: dotted path of its control loop class
    page: str  #: dotted path of its page view ``(request, search)``
    form: str  #: dotted path of its draft form view ``(request, search)``
    log: str  #: dotted path of its log download view ``(search)`` (the CSV of its evaluations)
    create: str  #: URL name of its creation form
    sources: Callable[[dict[str, Any]], list[tuple[str, int]]] = _none  #: (field, search) its configuration reads
    architectures: bool = False  #: its individuals are trained architectures (another search may start from one)

    def part(self, name: str) -> Any:
        """The object a dotted-path field names (``kind.part("loop")``), imported on first use."""
        return _imported(getattr(self, name))


@functools.cache
def _imported(path: str) -> Any:
    module, _, attribute = path.rpartition(".")
    return getattr(importlib.import_module(module), attribute)


@functools.cache
def kinds() -> dict[str, SearchKind]:
    """Every kind by name."""
    found = (importlib.import_module(module).KIND for module in KIND_MODULES)
    return {kind.name: kind for kind in found}


def kind_of(config: dict[str, Any]) -> SearchKind:
    """The kind of a checked configuration."""
    return kinds()[config.get("kind", DEFAULT)]
