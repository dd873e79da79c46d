"""Which path of a supernet is used when: every draw comes from a generator seeded by its coordinates, never
from a running random state, so any process that knows the coordinates draws the same path.

A path is a genome of the space (drawn by ``space.sample``: uniformly among the space's genomes, as Single Path
One-Shot samples; the cell space draws each edge's op uniformly and redraws a disconnected cell).
"""
from __future__ import annotations

import numpy as np

from nas.spaces.base import Genome, SearchSpace

#: Tags that keep the three uses of a seed apart (a training step's path never equals a probe's by design).
_TRAIN, _PROBE, _RANDOM = 0, 1, 2


def _rng(*words: int) -> np.random.Generator:
    if any(isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 0 for w in words):
        raise ValueError(f"seeds and steps must be integers >= 0 (got {words!r})")
    return np.random.default_rng([int(w) for w in words])


def path_for_step(space: SearchSpace, seed: int, step: int) -> Genome:
    """The path trained at global training step ``step`` of a supernet trained with ``seed``.

    A function of ``(seed, step)`` alone: every rank of a data-parallel gang computes the same path at the same
    step without exchanging anything, so DistributedDataParallel sees the same parameters used on every rank
    (the others are unused on all ranks alike and keep no gradient). It also makes a resumed training draw
    the very paths the uninterrupted one would have drawn.
    """
    return space.sample(_rng(seed, _TRAIN, step))


def probe_paths(space: SearchSpace, seed: int, epoch: int, count: int) -> list[Genome]:
    """The ``count`` paths whose validation accuracy is reported after ``epoch`` (drawn from ``(seed, epoch)``)."""
    rng = _rng(seed, _PROBE, epoch)
    return [space.sample(rng) for _ in range(count)]


def random_paths(space: SearchSpace, seed: int, count: int) -> list[Genome]:
    """``count`` distinct paths drawn from ``seed`` (fewer when the space has fewer genomes): the ranking
    check's sample."""
    rng = _rng(seed, _RANDOM)
    paths: dict[str, Genome] = {}
    misses = 0
    while len(paths) < count and misses < 1000:
        path = space.sample(rng)
        key = space.key(path)
        misses = misses + 1 if key in paths else 0
        paths.setdefault(key, path)
    return list(paths.values())
