"""Crossover operators on two gene sequences of equal length.

Each returns two children as new lists; position ``i`` of a child holds ``a[i]`` or ``b[i]`` (copied), and the
two children together hold exactly the genes of the two parents at every position.
"""
from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def _check_lengths(a: Sequence[T], b: Sequence[T]) -> None:
    if len(a) != len(b):
        raise ValueError(f"Parents must have the same length (len(a)={len(a)}, len(b)={len(b)}).")


def swap_where(a: Sequence[T], b: Sequence[T], mask: Sequence[bool]) -> tuple[list[T], list[T]]:
    """Two children: the first takes ``b[i]`` where ``mask[i]`` is true and ``a[i]`` elsewhere, the second the rest."""
    _check_lengths(a, b)
    if len(mask) != len(a):
        raise ValueError(f"`mask` must have the parents' length (len(mask)={len(mask)}, len(a)={len(a)}).")
    first = [y if swap else x for x, y, swap in zip(a, b, mask)]
    second = [x if swap else y for x, y, swap in zip(a, b, mask)]
    return copy.deepcopy(first), copy.deepcopy(second)


def one_point_crossover(a: Sequence[T], b: Sequence[T], rng: np.random.Generator) -> tuple[list[T], list[T]]:
    """Cut both parents at one random point and swap the tails: ``a[:c] + b[c:]`` and ``b[:c] + a[c:]``.

    The cut ``c`` is uniform in ``[1, n - 1]``, so each child takes at least one gene from each parent. Parents
    of fewer than two genes have no such cut: the children are copies of ``a`` and ``b``.
    """
    _check_lengths(a, b)
    n = len(a)
    cut = int(rng.integers(1, n)) if n >= 2 else n
    return swap_where(a, b, [i >= cut for i in range(n)])


def uniform_crossover(
    a: Sequence[T], b: Sequence[T], rng: np.random.Generator, swap_prob: float = 0.5
) -> tuple[list[T], list[T]]:
    """Swap the parents' genes at each position independently with probability ``swap_prob``."""
    _check_lengths(a, b)
    if not 0.0 <= swap_prob <= 1.0:
        raise ValueError(f"`swap_prob` must be in [0, 1] (swap_prob={swap_prob!r}).")
    return swap_where(a, b, [bool(draw < swap_prob) for draw in rng.random(len(a))])
