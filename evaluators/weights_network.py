"""The network a weight search evolves, described without torch: an MLP by its layer sizes, or a genome of one
of our spaces. The web server checks a weight search's network (its shape and its size) with this module, so
it must not import torch.

```
{"kind": "mlp", "layers": [64, 32, 10]}                            # input size, hidden sizes, classes
{"kind": "genome", "space": {"name": "chain", ...}, "genome": {...}} # any genome of nas.spaces
```
"""
from __future__ import annotations

import math
from typing import Any

from evaluators.catalog import dataset_shape

#: The most parameters a weight search may evolve. Each worker holds the weights, their gradient, the
#: optimizer's state (Adam: two more vectors) and a float64 gradient slice: about 28 bytes per parameter.
MAX_PARAMETERS = 5_000_000
BYTES_PER_PARAMETER = 28
MAX_LAYERS = 16
MAX_WIDTH = 8192
#: A genome network's fields: ``source_search`` and ``source_individual`` say whose best architecture it is
#: (``best_of``, resolved at creation), ``start`` whether the search begins from that individual's kept trained
#: weights (``kept``) or from the seeded initialisation (``scratch``: the source kept none).
GENOME_FIELDS = ("kind", "space", "genome", "source_search", "source_individual", "start")
STARTS = ("kept", "scratch")


class NetworkError(ValueError):
    """A bad network description; ``field`` is the offending part (``layers``, ``genome``, ...)."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


def mlp_parameters(layers: list[int]) -> int:
    """Weights and biases of the fully connected layers ``layers[0] -> layers[1] -> ...``."""
    return sum(a * b + b for a, b in zip(layers, layers[1:]))


def check_start(network: dict[str, Any]) -> None:
    """``start`` is ``kept`` or ``scratch``; ``kept`` needs the source (search and individual numbers)."""
    start = network.get("start", "scratch")
    if start not in STARTS:
        raise NetworkError("start", f"must be one of {', '.join(STARTS)} (got {start!r})")
    for field in ("source_search", "source_individual"):
        value = network.get(field)
        if (value is not None or start == "kept") and (isinstance(value, bool) or not isinstance(value, int)
                                                       or value < 0):
            raise NetworkError(field, f"must be a search's or individual's number (got {value!r})")


def check_network(network: Any, dataset: str) -> tuple[dict[str, Any], int]:
    """The network with defaults filled in and its parameter count, or :class:`NetworkError` naming the part.
    The count is checked against :data:`MAX_PARAMETERS` (the memory cap)."""
    if not isinstance(network, dict):
        raise NetworkError("network", f"must be an object (got {network!r})")
    kind = network.get("kind", "mlp")
    input_shape, classes = dataset_shape(dataset)
    inputs = math.prod(input_shape)
    if kind == "mlp":
        unknown = sorted(set(network) - {"kind", "layers"})
        if unknown:
            raise NetworkError(unknown[0], "unknown field; the fields are kind, layers")
        layers = network.get("layers", [inputs, 32, classes])
        if (not isinstance(layers, list) or not 2 <= len(layers) <= MAX_LAYERS
                or not all(isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= MAX_WIDTH for n in layers)):
            raise NetworkError("layers", f"must be a list of 2 to {MAX_LAYERS} layer sizes, each 1..{MAX_WIDTH} "
                                         f"(got {layers!r})")
        if layers[0] != inputs or layers[-1] != classes:
            raise NetworkError("layers", f"must start with the {dataset} input size {inputs} and end with its "
                                         f"{classes} classes (got {layers!r})")
        checked, count = {"kind": "mlp", "layers": layers}, mlp_parameters(layers)
    elif kind == "genome":
        from evaluators.builders import describe  # torch-free

        unknown = sorted(set(network) - set(GENOME_FIELDS))
        if unknown:
            raise NetworkError(unknown[0], f"unknown field; the fields are {', '.join(GENOME_FIELDS)}")
        try:
            described = describe(network.get("genome"), network.get("space") or {}, dataset)
        except (TypeError, ValueError, KeyError) as error:
            raise NetworkError("genome", f"is not a genome of the space: {error}") from None
        checked = {key: network[key] for key in GENOME_FIELDS if key in network}
        check_start(checked)
        count = int(described["params"])
    else:
        raise NetworkError("kind", f"must be one of mlp, genome (got {kind!r})")
    if count > MAX_PARAMETERS:
        raise NetworkError("layers" if kind == "mlp" else "genome",
                           f"has {count:,} parameters, more than the {MAX_PARAMETERS:,} a weight search may evolve "
                           f"(about {BYTES_PER_PARAMETER} bytes each per worker)")
    return checked, count
