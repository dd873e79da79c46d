"""The evaluation worker's side of a weight search (seed 001): one part of one phase of one generation.

A part is ``(generation, phase, j of N)``: phase ``evaluate`` scores offspring ``share(P, N, j)`` and stores
their fitness; phase ``gradient`` (``cu`` and ``su`` only) reads all ``P`` fitness values and stores the
gradient slice ``share(M, N, j)`` (``cu``) or the partial estimate of offspring ``share(P, N, j)`` (``su``).

Each slot keeps its copy of the search's weights in memory between generations (:class:`Copies`). Before a
part it brings its copy to the part's generation: already there (same digest), one step behind (it rebuilds the
previous generation's gradient from what travelled: the slices, the loop's sum, or the fitness values alone,
and applies the optimizer step every copy applies), or else it fetches the loop's published state once (a slot
that joined late, restarted or found a digest mismatch). No database access here.
"""
from __future__ import annotations

import os
import logging
import time
from collections import OrderedDict
from typing import Any

import numpy as np

from nas.neuroevolution import share
from webapp.messaging import signing
from webapp.messaging import weights_transport as wire
from webapp.worker import slots
from webapp.worker.heartbeat import Heartbeat

log = logging.getLogger(__name__)
PHASES = ("evaluate", "gradient")
PART_FIELDS = ("search", "generation", "phase", "part", "parts", "previous_parts", "digest", "config")


class ObsoletePart(RuntimeError):
    """The loop has moved past this part's generation: nothing to compute."""


def check_part(data: Any, signature: Any) -> dict[str, Any]:
    """The part, if the loop signed it and it is well formed; ``signing.MalformedPacket`` otherwise."""
    if not isinstance(data, dict) or sorted(data) != sorted(PART_FIELDS):
        raise signing.MalformedPacket(f"a weight part must be an object with {', '.join(PART_FIELDS)}")
    signing.verify(data, signature, "a weight part")
    if data["phase"] not in PHASES or not 0 <= data["part"] < data["parts"]:
        raise signing.MalformedPacket(f"bad weight part {data['phase']!r} {data['part']}/{data['parts']}")
    return data


class Copies:
    """This slot's copies of weight searches' weights, the most recently used few (one per search)."""

    def __init__(self, keep: int = 2) -> None:
        self.keep = keep
        self._copies: OrderedDict[int, Any] = OrderedDict()

    def get(self, search_id: int) -> Any:
        copy = self._copies.get(search_id)
        if copy is not None:
            self._copies.move_to_end(search_id)
        return copy

    def put(self, search_id: int, copy: Any) -> None:
        self._copies[search_id] = copy
        self._copies.move_to_end(search_id)
        while len(self._copies) > self.keep:
            self._copies.popitem(last=False)


COPIES = Copies()


def previous_gradient(copy: Any, search_id: int, generation: int, method: str, parts: int,
                      traffic: dict[str, int]) -> dict[str, np.ndarray] | None:
    """The full estimate of ``generation`` rebuilt from what travelled (``None`` when it is gone)."""
    if method == "scalars":
        fitness = gather_fitness(search_id, generation, parts, traffic)
        return None if fitness is None else copy.gradient_slice(generation, fitness, 0, copy.size)
    stored = wire.gradient_parts(search_id, generation, parts)
    if method == "su":
        total = stored.get(-1)  # the loop's sum of the partials
        if total is None:
            return None
        traffic["down"] += total.nbytes
        return split_vectors(total, copy)
    if any(part not in stored for part in range(parts)):
        return None
    traffic["down"] += sum(stored[part].nbytes for part in range(parts))
    pieces = [split_vectors(stored[part], copy, len(share(copy.size, parts, part))) for part in range(parts)]
    return {name: np.concatenate([piece[name] for piece in pieces]) for name in pieces[0]}


def split_vectors(values: np.ndarray, copy: Any, length: int | None = None) -> dict[str, np.ndarray]:
    """A stored slice as the estimate's vectors (SNES stores mu's slice, then sigma's)."""
    if copy.sigma is None:
        return {"theta": values}
    length = len(values) // 2 if length is None else length
    return {"mu": values[:length], "sigma": values[length:]}


def gather_fitness(search_id: int, generation: int, parts: int, traffic: dict[str, int]) -> list[float] | None:
    """All ``P`` fitness values of ``generation`` in offspring order (the allgather), ``None`` if incomplete."""
    stored = wire.fitness_parts(search_id, generation, parts)
    if any(part not in stored for part in range(parts)):
        return None
    traffic["down"] += sum(len(str(stored[part])) for part in range(parts))
    return [float("nan") if v is None else v for part in range(parts) for v in stored[part]]


def bring_to(part: dict[str, Any], traffic: dict[str, int]) -> Any:
    """This slot's copy of the search's weights at the part's generation, with the part's digest."""
    from evaluators.neuroevolution import WeightEvolution, WeightRun

    search_id, generation, digest = part["search"], part["generation"], part["digest"]
    run = WeightRun.from_config(part["config"])
    copy = COPIES.get(search_id)
    if copy is not None and copy.run != run:
        copy = None
    if copy is not None and copy.generation == generation - 1:
        gradient = previous_gradient(copy, search_id, generation - 1, part["config"]["weights"]["method"],
                                     part["previous_parts"], traffic)
        if gradient is not None:
            copy.apply(gradient)
    if copy is not None and copy.generation == generation and copy.digest() == digest:
        return copy
    state = wire.current_state(search_id, with_blob=True)
    if state is None or state["generation"] != generation or state["digest"] != digest:
        raise ObsoletePart(f"search {search_id} is at {state and state['generation']}, not at {generation}")
    copy = WeightEvolution(run, slots.identity().device) if copy is None else copy
    copy.load_state(state["blob"])
    traffic["fetched"] += len(state["blob"])
    COPIES.put(search_id, copy)
    return copy


def part_beat(part: dict[str, Any], info: dict[str, Any]) -> Heartbeat:
    """The part's heartbeat key, refreshed while it is computed (it expires if the slot dies)."""
    args = (part["search"], part["generation"], part["parts"], part["phase"], part["part"])
    return Heartbeat("weights-heartbeat", lambda: wire.beat_part(*args, info), lambda: wire.clear_part_beat(*args))


def compute(part: dict[str, Any], copy: Any, traffic: dict[str, int]) -> tuple[Any, int]:
    """The part's values (fitness values, or a gradient slice or partial) and how many offspring it scored."""
    generation, j, parts = part["generation"], part["part"], part["parts"]
    population = copy.run.es.population
    if part["phase"] == "evaluate":
        offspring = share(population, parts, j)
        return copy.evaluate(generation, offspring), len(offspring)
    fitness = gather_fitness(part["search"], generation, parts, traffic)
    if fitness is None:
        raise ObsoletePart(f"the fitness values of generation {generation} are gone")
    if part["config"]["weights"]["method"] == "cu":
        span = share(copy.size, parts, j)
        estimate = copy.gradient_slice(generation, fitness, span.start, span.stop)
    else:
        estimate = copy.gradient_slice(generation, fitness, 0, copy.size, share(population, parts, j))
    return np.concatenate(list(estimate.values())), 0


def store(part: dict[str, Any], values: Any) -> int:
    """Store the part's values where the loop and the other copies read them; returns the bytes written."""
    args = (part["search"], part["generation"], part["parts"], part["part"])
    return wire.put_fitness(*args, values) if part["phase"] == "evaluate" else wire.put_gradient(*args, values)


def run_part(data: Any, signature: Any) -> str:
    """Run one signed part; returns ``done`` or ``obsolete``. Raises ``signing.MalformedPacket`` for a bad one."""
    part = check_part(data, signature)
    me = slots.identity()
    traffic = {"down": 0, "fetched": 0}
    started = time.perf_counter()
    slots.set_current({"search": part["search"], "generation": part["generation"], "phase": part["phase"]})
    try:
        with part_beat(part, {"slot": me.name, "pid": os.getpid(), "started": time.time()}):
            copy = bring_to(part, traffic)
            ready = time.perf_counter()
            values, evaluated = compute(part, copy, traffic)
            finished = time.perf_counter()
            size = 8 * len(values) if part["phase"] == "gradient" else wire.fitness_bytes(values)
            # The report first: the loop reads the reports once it has every part's values.
            wire.put_report(part["search"], part["generation"], part["parts"], part["phase"], part["part"], {
                "node": me.node, "device": me.device, "slot": me.name, "offspring": evaluated,
                "seconds": finished - ready, "prepare": ready - started, "bytes_up": size,
                "bytes_down": traffic["down"], "fetched": traffic["fetched"]})
            store(part, values)
    except ObsoletePart as error:
        log.info("weight part skipped: %s", error)
        return "obsolete"
    except Exception as error:  # OOM, a bug: a result for the loop (which fails the search), never a retry loop
        log.exception("weight part %s failed", {k: part[k] for k in ("search", "generation", "phase", "part")})
        wire.put_failure(part["search"], part["generation"], part["phase"], part["part"],
                         f"{type(error).__name__}: {error}")
        return "failed"
    finally:
        slots.set_current(None)
    return "done"
