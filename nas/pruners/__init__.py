"""Pruners by name: ``get_pruner("curve", seed=1, direction="max", max_steps=20, k=5)``.

Every pruner watches learning curves as they are reported and says which candidates to stop early
(:mod:`nas.pruners.base`); it keeps its whole state as JSON (``state_dict`` / :func:`pruner_from_state`) and
describes its parameters for a form (``describe_params()``).
"""
from __future__ import annotations

from typing import Any

from nas.pruners.base import Decision, Pruner
from nas.pruners.curve import CurvePruner
from nas.pruners.freeze import FreezeThawPruner
from nas.pruners.simple import ASHAPruner, MedianPruner, NoPruner

#: Every registered pruner, by its ``name``.
PRUNERS: dict[str, type[Pruner]] = {cls.name: cls for cls in (NoPruner, MedianPruner, ASHAPruner, CurvePruner)}
#: Pruners whose decisions the search loop cannot carry out yet (``pause``): for the benchmark and tests only.
UNOFFERED: dict[str, type[Pruner]] = {FreezeThawPruner.name: FreezeThawPruner}

__all__ = ["PRUNERS", "UNOFFERED", "ASHAPruner", "CurvePruner", "FreezeThawPruner", "Decision", "MedianPruner", "NoPruner", "Pruner",
           "get_pruner", "pruner_from_state"]


def _lookup(name: Any) -> type[Pruner]:
    if name not in PRUNERS:
        raise ValueError(f"Unknown pruner {name!r}; the known pruners are {', '.join(PRUNERS)}.")
    return PRUNERS[name]


def get_pruner(name: str, seed: int = 0, direction: str = "max", max_steps: float = 1.0, **params: Any) -> Pruner:
    """The pruner registered as ``name``; ``ValueError`` names an unknown pruner, parameter or bad value."""
    return _lookup(name)(seed, direction, max_steps, **params)


def unoffered_pruner(name: str, seed: int = 0, direction: str = "max", max_steps: float = 1.0,
                     **params: Any) -> Pruner:
    """A pruner of :data:`UNOFFERED` (or a registered one) by name, for the benchmark and tests."""
    cls = UNOFFERED.get(name) or _lookup(name)
    return cls(seed, direction, max_steps, **params)


def pruner_from_state(state: Any) -> Pruner:
    """The pruner that saved ``state`` (its ``state_dict()``), deciding on where it stopped."""
    if not isinstance(state, dict):
        raise ValueError(f"A pruner state must be a dict with a `name` (state={str(state)[:100]}).")
    return _lookup(state.get("name")).from_state(state)
