"""OpenAI-ES and SNES as pure functions of the fitness values and the seeds.

A generation ``g`` samples ``P`` offspring ``theta + sigma * eps_i`` (``eps_i`` from :mod:`.noise`, mirrored in
pairs when asked), evaluates their fitness (higher is better), shapes it into centred ranks ``u`` and estimates
the ascent direction slice by slice:

- OpenAI-ES (Salimans et al. 2017): ``grad[k] = sum_i u_i eps_i[k] / (P sigma)``.
- SNES (Schaul et al. 2011; Lenc et al. 2019), with a per-parameter ``sigma``: ``grad_mu[k] = sigma[k] *
  sum_i u_i eps_i[k] / P`` and ``grad_sigma[k] = sum_i u_i (eps_i[k]^2 - 1) / P`` (the log-sigma step).

Every estimate is a sum over offspring of a term that only needs the parameters ``[a, b)`` it produces, so a
worker computes its slice from the ``P`` fitness values alone (chromosome updates), and the sum over offspring
splits over workers (semi-updates). :mod:`.distribution` builds both on :func:`gradient_slice`.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from nas.neuroevolution.noise import BLOCK, base_noise, offspring_row

ALGORITHMS = ("openai_es", "snes")
#: The most parameters a weight search may evolve (the noise of one offspring is regenerated per slice).
MAX_PARAMETERS = 50_000_000


@dataclasses.dataclass(frozen=True)
class ESConfig:
    """What fixes a generation's noise and estimate: the algorithm, the population, sigma and the seed."""

    algorithm: str = "openai_es"
    population: int = 64
    sigma: float = 0.05
    mirrored: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"The `algorithm` must be one of {', '.join(ALGORITHMS)} (algorithm={self.algorithm!r}).")
        if isinstance(self.population, bool) or not isinstance(self.population, int) or self.population < 2:
            raise ValueError(f"The `population` must be an integer of at least 2 (population={self.population!r}).")
        if self.mirrored and self.population % 2:
            raise ValueError(f"The `population` must be even with mirrored sampling, which evaluates offspring in "
                             f"+/- pairs (population={self.population}).")
        if not isinstance(self.sigma, (int, float)) or not math.isfinite(self.sigma) or self.sigma <= 0:
            raise ValueError(f"The `sigma` must be a finite number greater than 0 (sigma={self.sigma!r}).")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"The `seed` must be a non-negative integer (seed={self.seed!r}).")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def centred_ranks(fitness: np.ndarray | list[float]) -> np.ndarray:
    """Fitness shaping: the ranks mapped to ``[-0.5, 0.5]`` (the worst -0.5, the best 0.5). NaN ranks lowest;
    ties are broken by offspring index, so the shaping is a pure function of the values."""
    values = np.asarray(fitness, dtype=np.float64)
    if values.ndim != 1 or values.size < 2:
        raise ValueError(f"centred ranks need a vector of at least 2 fitness values (got shape {values.shape})")
    keyed = np.where(np.isnan(values), -np.inf, values)
    order = np.argsort(keyed, kind="stable")
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = np.arange(values.size, dtype=np.float64)
    return ranks / (values.size - 1) - 0.5


def perturbation(config: ESConfig, generation: int, index: int, start: int, stop: int,
                 sigma: np.ndarray | None = None, block: int = BLOCK) -> np.ndarray:
    """``x_i - theta`` on ``[start, stop)``: ``sigma * eps_i`` (``sigma`` the slice of SNES's vector, else the
    config's scalar)."""
    row, sign = offspring_row(index, config.mirrored)
    noise = base_noise(config.seed, generation, row, start, stop, block)
    scale = config.sigma if sigma is None else np.asarray(sigma, dtype=np.float64)
    return noise * (sign * scale)


def gradient_slice(config: ESConfig, generation: int, utilities: np.ndarray, start: int, stop: int,
                   offspring: range | None = None, sigma: np.ndarray | None = None,
                   block: int = BLOCK) -> dict[str, np.ndarray]:
    """The ascent estimate on parameters ``[start, stop)`` from the ``offspring`` (all by default) with the
    shaped ``utilities`` of the whole population: ``{"theta": ...}`` for OpenAI-ES, ``{"mu": ..., "sigma":
    ...}`` for SNES (``sigma``: SNES's ``sigma[start:stop]``). Normalised by the whole population, so partial
    sums over disjoint offspring ranges add up to the full estimate. Memory: O(stop - start + block)."""
    utilities = np.asarray(utilities, dtype=np.float64)
    if utilities.shape != (config.population,):
        raise ValueError(f"need {config.population} utilities, one per offspring (got shape {utilities.shape})")
    offspring = range(config.population) if offspring is None else offspring
    length = stop - start
    weighted = np.zeros(length, dtype=np.float64)
    squared = np.zeros(length, dtype=np.float64) if config.algorithm == "snes" else None
    noise = np.empty(length, dtype=np.float64)
    for index in offspring:
        row, sign = offspring_row(index, config.mirrored)
        base_noise(config.seed, generation, row, start, stop, block, out=noise)
        weighted += (sign * utilities[index]) * noise
        if squared is not None:
            squared += utilities[index] * (noise * noise - 1.0)
    population = config.population
    if config.algorithm == "openai_es":
        return {"theta": weighted / (population * config.sigma)}
    scale = np.full(length, config.sigma) if sigma is None else np.asarray(sigma, dtype=np.float64)
    if scale.shape != (length,):
        raise ValueError(f"SNES needs sigma for parameters [{start}, {stop}) (got shape {scale.shape})")
    return {"mu": scale * weighted / population, "sigma": squared / population}


def reference_gradient(config: ESConfig, generation: int, fitness: np.ndarray, parameters: int,
                       sigma: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The single-process estimate with the whole ``P x M`` noise matrix materialised (tests, small ``M``)."""
    utilities = centred_ranks(fitness)
    rows = np.stack([perturbation(config, generation, i, 0, parameters, np.ones(parameters)) for i in
                     range(config.population)])
    if config.algorithm == "openai_es":
        return {"theta": utilities @ rows / (config.population * config.sigma)}
    scale = np.full(parameters, config.sigma) if sigma is None else np.asarray(sigma, dtype=np.float64)
    return {"mu": scale * (utilities @ rows) / config.population,
            "sigma": utilities @ (rows * rows - 1.0) / config.population}


def snes_sigma_step(sigma: np.ndarray, gradient: np.ndarray, rate: float) -> np.ndarray:
    """SNES's multiplicative step of the per-parameter ``sigma`` along its log-gradient."""
    return sigma * np.exp(0.5 * rate * gradient)


def default_snes_sigma_rate(parameters: int) -> float:
    """SNES's usual learning rate for sigma, ``(3 + ln M) / (5 sqrt M)``."""
    return (3.0 + math.log(parameters)) / (5.0 * math.sqrt(parameters))
