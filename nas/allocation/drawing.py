"""The draws a plan of the allocator (``nas.allocation.policy``) is played out over: each gang size's efficiency as
uncertain as the model still is about it, and the candidates before the last few spread evenly over the gang slots.
"""
from __future__ import annotations

import numpy as np

#: The widest spread (log scale) of a gang size's efficiency the plans draw.
UNSURE_LIMIT = 1.0


def unsure(draws: np.ndarray, sigma: float) -> np.ndarray:
    """Duration factors for an efficiency known up to a log standard deviation of ``sigma``, with mean 1: the
    model's expectation stays the expectation (a plan on an unmeasured gang size is judged under the posterior, not
    penalised for its uncertainty). At most ``UNSURE_LIMIT``: a wider lognormal's mean rests on draws too rare for the
    samples, which would make every plan on it look instant."""
    sigma = float(np.clip(sigma, -UNSURE_LIMIT, UNSURE_LIMIT))
    factors = np.exp(draws * sigma)
    return factors / factors.mean()  # the mean of these very draws: a plan is not favoured by a lucky sample


def water_fill(free: np.ndarray, cost: np.ndarray, count: int) -> np.ndarray:
    """The slots' free times after ``count`` candidates of mean ``cost`` seconds per slot fill them up to one level
    (the level where the slots' capacity below it holds ``count`` candidates), per draw."""
    low = free.min(axis=1)
    high = free.max(axis=1) + count * cost.max(axis=1)
    for _ in range(40):
        level = (low + high) / 2
        held = (np.maximum(0.0, level[:, None] - free) / cost).sum(axis=1)
        too_low = held < count
        low = np.where(too_low, level, low)
        high = np.where(too_low, high, level)
    return np.maximum(free, high[:, None])
