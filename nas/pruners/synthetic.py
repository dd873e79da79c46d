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


#: The shapes of :class:`ShapedCurve`, those real training produces (issue 29): ordinary power laws and saturating
#: exponentials; late risers (learning-rate warm-up, or a cosine schedule that gains most at the end); plateaus
#: that jump when a step schedule decays the rate; divergers that look best and then fall; noisy curves.
SHAPES = ("power", "exponential", "late", "step", "diverger", "noisy")


@dataclasses.dataclass(frozen=True)
class ShapedCurve:
    """A curve of one of :data:`SHAPES` from ``start`` (at the first epoch) to exactly ``final`` (at ``max_steps``);
    ``a``, ``b``, ``c``, ``d``: the shape's own parameters (:meth:`draw` says which)."""

    shape: str
    final: float
    start: float
    noise: float
    max_steps: float
    a: float = 0.0
    b: float = 0.0
    c: float = 0.0
    d: float = 0.0

    @classmethod
    def draw(cls, rng: np.random.Generator, shape: str, max_steps: float = 20.0,
             quality: float | None = None) -> ShapedCurve:
        """A random curve of ``shape``; ``quality`` in [0, 1) fixes the final value (drawn otherwise) as
        :class:`SyntheticCurve` does, so every shape ends in the same range."""
        if shape not in SHAPES:
            raise ValueError(f"`shape` must be one of {', '.join(SHAPES)} (shape={shape!r}).")
        q = float(rng.random()) if quality is None else quality
        final, start = 0.55 + 0.43 * q ** 0.7, float(rng.uniform(0.08, 0.3))
        noise = float(rng.uniform(0.03, 0.06)) if shape == "noisy" else float(rng.uniform(0.002, 0.015))
        a, b, c, d = (float(v) for v in rng.random(4))
        if shape == "power":  # a: the exponent
            a, b = 0.3 + 0.9 * a, 0.0
        elif shape in ("exponential", "noisy"):  # a: the time constant (share of the budget)
            a = 0.05 + 0.3 * a
        elif shape == "late":  # a: where it rises (share), b: how steeply
            a, b = 0.45 + 0.4 * a, 0.04 + 0.08 * b
        elif shape == "step":  # a: time constant, b and c: the two decays (shares), d: the share gained by jumps
            a, b, c, d = 0.05 + 0.2 * a, 0.4 + 0.2 * b, 0.68 + 0.17 * c, 0.15 + 0.25 * d
        else:  # diverger: a: time constant, b: where it turns (share), c: how fast it falls, d: how far
            a, b, c, d = 0.04 + 0.12 * a, 0.3 + 0.4 * b, 0.05 + 0.15 * c, min(0.1 + 0.25 * d, 0.99 - final)
        return cls(shape, final, start, noise, max_steps, a, b, c, d)

    def mean(self, x: float) -> float:
        """The noiseless value at ``x`` epochs."""
        first = min(1.0, 1.0 / self.max_steps)
        u = min(max(x / self.max_steps, first), 1.0)
        rise = self.final - self.start
        if self.shape == "power":
            return self.final - rise * (u ** -self.a - 1.0) / (first ** -self.a - 1.0)
        if self.shape in ("exponential", "noisy"):
            return self.start + rise * _saturate(u - first, self.a) / _saturate(1.0 - first, self.a)
        if self.shape == "late":
            s = [1.0 / (1.0 + math.exp(-(v - self.a) / self.b)) for v in (u, first, 1.0)]
            return self.start + rise * (s[0] - s[1]) / (s[2] - s[1])
        if self.shape == "step":
            base = (1.0 - self.d) * _saturate(u - first, self.a) / _saturate(1.0 - first, self.a)
            jumps = sum(0.5 * self.d * _saturate(u - at, 0.02) / _saturate(1.0 - at, 0.02) for at in (self.b, self.c))
            return self.start + rise * (base + jumps)
        peak = self.final + self.d  # diverger: rises fast to its peak, falls by d from b on
        value = self.start + (peak - self.start) * _saturate(u - first, self.a) / _saturate(1.0 - first, self.a)
        return value - self.d * _saturate(u - self.b, self.c) / _saturate(1.0 - self.b, self.c)

    def observe(self, x: float, rng: np.random.Generator) -> float:
        """A noisy observation at ``x``, within [0, 1] (an accuracy)."""
        return min(max(self.mean(x) + self.noise * float(rng.standard_normal()), 0.0), 1.0)


def _saturate(v: float, tau: float) -> float:
    """``1 - exp(-v / tau)`` for ``v > 0``, else 0."""
    return 1.0 - math.exp(-v / tau) if v > 0 else 0.0
