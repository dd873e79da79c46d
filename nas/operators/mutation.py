"""Mutation operators on single genes and gene sequences.

Every function takes ``rng: numpy.random.Generator``, returns new values and never modifies its inputs.
"""
from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def choose(choices: Sequence[T], rng: np.random.Generator) -> T:
    """One element of ``choices``, uniformly (the element itself, never a numpy scalar)."""
    if len(choices) == 0:
        raise ValueError("`choices` must not be empty (choices=[]).")
    return copy.deepcopy(choices[int(rng.integers(len(choices)))])


def resample_gene(choices: Sequence[T], current: T, rng: np.random.Generator) -> T:
    """A value of ``choices`` other than ``current``, uniformly among the others.

    ``current`` need not be in ``choices``; then any choice may come back. Raises ``ValueError`` when
    ``current`` is the only choice, since no different value exists.
    """
    others = [choice for choice in choices if choice != current]
    if not others:
        raise ValueError(
            f"Cannot resample a gene with a single choice: `current` is the only value (choices={list(choices)!r}, "
            f"current={current!r})."
        )
    return choose(others, rng)


def mutation_mask(n: int, rate: float, rng: np.random.Generator) -> list[bool]:
    """Which of ``n`` genes to mutate: each with probability ``rate``, and at least one when ``n > 0``.

    Forcing one gene (uniformly chosen) when the draws pick none makes every mutation change something; the
    expected number of changed genes is ``n * rate + (1 - rate) ** n``.
    """
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"`rate` must be in [0, 1] (rate={rate!r}).")
    mask = [bool(draw < rate) for draw in rng.random(n)]
    if n > 0 and not any(mask):
        mask[int(rng.integers(n))] = True
    return mask


def resample_genes(
    genes: Sequence[T], choices: Sequence[Sequence[T]], rate: float, rng: np.random.Generator
) -> list[T]:
    """Resample each gene that has more than one choice with probability ``rate``; at least one always changes.

    ``choices[i]`` lists the values gene ``i`` may take. Genes with a single choice never change; if every gene
    has a single choice, ``ValueError`` is raised (nothing can change).
    """
    if len(genes) != len(choices):
        raise ValueError(
            f"`genes` and `choices` must have the same length (len(genes)={len(genes)}, len(choices)={len(choices)})."
        )
    mutable = [i for i, options in enumerate(choices) if len(options) > 1]
    if not mutable:
        raise ValueError(f"No gene has more than one choice, so none can change (choices={list(choices)!r}).")
    child = copy.deepcopy(list(genes))
    for i, hit in zip(mutable, mutation_mask(len(mutable), rate, rng)):
        if hit:
            child[i] = resample_gene(choices[i], genes[i], rng)
    return child


def replace_at(seq: Sequence[T], index: int, value: T) -> list[T]:
    """A copy of ``seq`` with ``seq[index]`` replaced by ``value``."""
    if not -len(seq) <= index < len(seq):
        raise IndexError(f"`index` is out of range (index={index}, len(seq)={len(seq)}).")
    child = copy.deepcopy(list(seq))
    child[index] = copy.deepcopy(value)
    return child
