"""The three ways a generation's estimate is spread over ``N`` workers, as pure functions, and what each moves.

- ``cu`` (DarwiNN's chromosome updates): worker ``j`` evaluates its offspring range, the ``P`` fitness values
  are allgathered, worker ``j`` computes the gradient on its parameter range, the slices are allgathered.
- ``su`` (semi-updates, DarwiNN's baseline): the fitness values are allgathered (for the shaping), worker ``j``
  computes the partial estimate of its own offspring over all ``M`` parameters, the partials are summed.
- ``scalars``: only the fitness values travel; every worker rebuilds the whole estimate from the seeds.

All three equal :func:`nas.neuroevolution.es.gradient_slice` over ``[0, M)`` up to float rounding; they differ
in what travels (:func:`traffic`) and in how much noise each worker regenerates.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from nas.neuroevolution.es import ESConfig, centred_ranks, gradient_slice

METHODS = ("cu", "su", "scalars")
#: Bytes of one value on the wire (float32 weights and gradients, float32 fitness values).
VALUE_BYTES = 4


def share(total: int, workers: int, worker: int) -> range:
    """Worker ``worker``'s contiguous share of ``range(total)`` split over ``workers`` (the first ``total %
    workers`` get one more): offspring for evaluation, parameters for a gradient slice."""
    if workers < 1 or not 0 <= worker < workers:
        raise ValueError(f"need 0 <= worker < workers (got worker={worker}, workers={workers})")
    size, extra = divmod(total, workers)
    start = worker * size + min(worker, extra)
    return range(start, start + size + (1 if worker < extra else 0))


def _concat(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


def cu_gradient(config: ESConfig, generation: int, fitness: np.ndarray, parameters: int, workers: int,
                sigma: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The estimate as chromosome updates build it: worker ``j``'s slice, then the allgather of the slices."""
    utilities = centred_ranks(fitness)
    parts = []
    for worker in range(workers):
        span = share(parameters, workers, worker)
        local_sigma = None if sigma is None else sigma[span.start:span.stop]
        parts.append(gradient_slice(config, generation, utilities, span.start, span.stop, sigma=local_sigma))
    return _concat(parts)


def su_gradient(config: ESConfig, generation: int, fitness: np.ndarray, parameters: int, workers: int,
                sigma: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The estimate as semi-updates build it: worker ``j``'s partial over its offspring, summed in order."""
    utilities = centred_ranks(fitness)
    total: dict[str, np.ndarray] | None = None
    for worker in range(workers):
        partial = gradient_slice(config, generation, utilities, 0, parameters,
                                 offspring=share(config.population, workers, worker), sigma=sigma)
        total = partial if total is None else {name: total[name] + partial[name] for name in total}
    assert total is not None
    return total


def scalars_gradient(config: ESConfig, generation: int, fitness: np.ndarray, parameters: int, workers: int = 1,
                     sigma: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The estimate every worker rebuilds alone from the fitness values (the same on each of them)."""
    return gradient_slice(config, generation, centred_ranks(fitness), 0, parameters, sigma=sigma)


GRADIENTS = {"cu": cu_gradient, "su": su_gradient, "scalars": scalars_gradient}


def distributed_gradient(method: str, config: ESConfig, generation: int, fitness: np.ndarray, parameters: int,
                         workers: int, sigma: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The estimate by ``method`` over ``workers`` workers."""
    if method not in GRADIENTS:
        raise ValueError(f"The `method` must be one of {', '.join(METHODS)} (method={method!r}).")
    return GRADIENTS[method](config, generation, fitness, parameters, workers, sigma)


def traffic(method: str, parameters: int, population: int, workers: int, value_bytes: int = VALUE_BYTES,
            vectors: int = 1) -> dict[str, Any]:
    """Bytes one generation moves through the hub (Redis), counted per value: each worker uploads what it made
    and downloads what the others made (never its own part back). ``vectors`` is 2 for SNES (mu and sigma).

    - fitness (all methods): each uploads its ``P/N`` values, downloads the other ``P - P/N``.
    - ``cu``: each uploads its slice ``M/N`` (per vector) and downloads the other ``M - M/N``: an allgather.
    - ``su``: each uploads a full partial ``M`` and downloads the sum of the others' (``M``, none when alone):
      an all-reduce, twice an allgather, the ratio DarwiNN claims.
    - ``scalars``: nothing but the fitness values.

    ``weights`` is what sending the population's weights would cost instead (``P x M`` values down, as an
    architecture search ships its individuals), for comparison. Returns per-generation totals and the largest
    per-worker figures."""
    if method not in METHODS:
        raise ValueError(f"The `method` must be one of {', '.join(METHODS)} (method={method!r}).")
    up = down = 0
    worker_up = worker_down = 0
    for worker in range(workers):
        own = len(share(population, workers, worker))
        sent, received = own, population - own
        if method == "cu":
            slice_len = len(share(parameters, workers, worker))
            sent += vectors * slice_len
            received += vectors * (parameters - slice_len)
        elif method == "su":
            sent += vectors * parameters
            received += vectors * parameters if workers > 1 else 0
        up, down = up + sent, down + received
        worker_up, worker_down = max(worker_up, sent), max(worker_down, received)
    return {
        "method": method, "parameters": parameters, "population": population, "workers": workers,
        "bytes_up": up * value_bytes, "bytes_down": down * value_bytes, "bytes": (up + down) * value_bytes,
        "worker_bytes_up": worker_up * value_bytes, "worker_bytes_down": worker_down * value_bytes,
        "weights_bytes": population * parameters * value_bytes,
    }
