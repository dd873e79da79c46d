"""Search spaces by name: ``get_space("pelee")``, ``space_from_config({"name": "chain", "max_layers": 6})``."""
from __future__ import annotations

import inspect
from typing import Any

from nas.spaces.base import Decision, Genome, GenomeError, SearchSpace, canonical_json
from nas.spaces.cell import CellSpace
from nas.spaces.chain import ChainSpace
from nas.spaces.pelee import PeleeSpace

#: Every registered space, by its ``name``.
SPACES: dict[str, type[SearchSpace]] = {space.name: space for space in (PeleeSpace, ChainSpace, CellSpace)}

__all__ = [
    "SPACES",
    "CellSpace",
    "ChainSpace",
    "Decision",
    "Genome",
    "GenomeError",
    "PeleeSpace",
    "SearchSpace",
    "canonical_json",
    "get_space",
    "space_from_config",
    "space_to_config",
]


def get_space(name: str, **params: Any) -> SearchSpace:
    """The space registered as ``name``, built with ``params``.

    Raises ``ValueError`` for an unknown name (listing the known ones), an unknown parameter (listing the
    space's parameters) or a bad parameter value (the space's own message).
    """
    if name not in SPACES:
        raise ValueError(f"Unknown search space {name!r}; the known spaces are {', '.join(sorted(SPACES))}.")
    cls = SPACES[name]
    accepted = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(
            f"The {name!r} space has no parameter {', '.join(map(repr, unknown))}; "
            f"its parameters are {', '.join(accepted)} (params={params!r})."
        )
    return cls(**params)


def space_from_config(config: dict[str, Any]) -> SearchSpace:
    """The space described by ``{"name": ..., **params}`` (the inverse of :func:`space_to_config`)."""
    if not isinstance(config, dict) or not isinstance(config.get("name"), str):
        raise ValueError(
            f"A space config must be a dict with a string `name` (one of {', '.join(sorted(SPACES))}) "
            f"and the space's parameters (config={config!r})."
        )
    params = {key: value for key, value in config.items() if key != "name"}
    return get_space(config["name"], **params)


def space_to_config(space: SearchSpace) -> dict[str, Any]:
    """``{"name": space.name, **space.params()}``, JSON-ready."""
    return {"name": space.name, **space.params()}
