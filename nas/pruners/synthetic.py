"""Synthetic learning curves with known final values: what the curve pruner is calibrated on, what the
benchmark prunes, and what the simulated evaluator reports.

A curve rises from ``start`` towards a hidden ``ceiling`` as ``1 - exp(-(x / tau) ** shape)``: ``tau`` (its
speed) and ``shape`` (below 1: fast then slow; above 1: late rising) vary by candidate, and every observed
value carries Gaussian noise of its own size. The known final value is the noiseless curve at ``max_steps``.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np


@dataclasses.dataclass(frozen=True)
class SyntheticCurve:
    """One candidate's curve (larger is better, accuracy-like in [0, 1])."""

    ceiling: float
    start: float
    tau: float  #: epochs to reach about 63% of the way (as a fraction of ``max_steps`` times ``max_steps``)
    shape: float
    noise: float
    max_steps: float

    @classmethod
    def draw(cls, rng: np.random.Generator, max_steps: float = 20.0, quality: float | None = None) -> SyntheticCurve:
        """A random curve; ``quality`` in [0, 1) fixes the ceiling (drawn otherwise)."""
        q = float(rng.random()) if quality is None else quality
        return cls(ceiling=0.55 + 0.43 * q ** 0.7, start=float(rng.uniform(0.08, 0.3)),
                   tau=max_steps * float(rng.uniform(0.08, 0.5)), shape=float(rng.uniform(0.6, 1.6)),
                   noise=float(rng.uniform(0.002, 0.015)), max_steps=max_steps)

    def mean(self, x: float) -> float:
        """The noiseless value at ``x`` epochs."""
        return self.start + (self.ceiling - self.start) * (1.0 - math.exp(-((max(x, 0.0) / self.tau) ** self.shape)))

    @property
    def final(self) -> float:
        """The known final value: the noiseless curve at ``max_steps``."""
        return self.mean(self.max_steps)

    def observe(self, x: float, rng: np.random.Generator) -> float:
        """A noisy observation at ``x``."""
        return self.mean(x) + self.noise * float(rng.standard_normal())
