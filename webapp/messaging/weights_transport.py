"""What crosses Redis in a weight search (seed 001), beside the Celery tasks that hand out its parts.

| key | kind | written by | meaning |
| --- | --- | --- | --- |
| ``nas:ne:<search>:state`` | hash | the loop | ``generation``, ``digest`` and ``blob`` (the weights, SNES's sigma and the optimizer state, ``torch.save`` of tensors and arrays): what a worker that joins late, restarted or lost its copy fetches once |
| ``nas:ne:<search>:fitness:<g>:<N>`` | hash | workers | part ``j`` of ``N`` -> the JSON list of its offspring's fitness values (the allgather of fitness) |
| ``nas:ne:<search>:grad:<g>:<N>`` | hash | workers, the loop | part ``j`` -> its gradient slice (``cu``) or partial (``su``), raw little-endian float64; ``-1``: the loop's sum (``su``) |
| ``nas:ne:<search>:report:<g>:<N>`` | hash | workers | ``<phase>:<j>`` -> JSON: who ran it, seconds, bytes it moved |
| ``nas:ne:<search>:hb:<g>:<N>:<phase>:<j>`` | string, TTL | the running slot | the part is being computed |

Writes of one part are idempotent (the same values whoever computes it), so a part computed twice after a fault
changes nothing. The keys name the split ``N`` too: a loop restarted with another number of live slots splits
the generation anew, and parts of the old split can never mix with the new. The loop deletes a generation's keys once the next one is under way.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
from django.conf import settings

from webapp.messaging.transport import client

#: How long a generation's keys live at most (the loop deletes them much sooner).
GENERATION_TTL = 3600


def _base(search_id: int) -> str:
    return f"nas:ne:{search_id}"


def state_key(search_id: int) -> str:
    return f"{_base(search_id)}:state"


def fitness_key(search_id: int, generation: int, parts: int) -> str:
    return f"{_base(search_id)}:fitness:{generation}:{parts}"


def gradient_key(search_id: int, generation: int, parts: int) -> str:
    return f"{_base(search_id)}:grad:{generation}:{parts}"


def report_key(search_id: int, generation: int, parts: int) -> str:
    return f"{_base(search_id)}:report:{generation}:{parts}"


def part_beat_key(search_id: int, generation: int, parts: int, phase: str, part: int) -> str:
    return f"{_base(search_id)}:hb:{generation}:{parts}:{phase}:{part}"


# --- the loop -------------------------------------------------------------------------------------------------


def publish_state(search_id: int, generation: int, digest: str, blob: bytes) -> None:
    client().hset(state_key(search_id), mapping={"generation": generation, "digest": digest, "blob": blob})


def fitness_parts(search_id: int, generation: int, parts: int) -> dict[int, list[float | None]]:
    raw = client().hgetall(fitness_key(search_id, generation, parts))
    return {int(part): json.loads(values) for part, values in raw.items()}


def gradient_parts(search_id: int, generation: int, parts: int) -> dict[int, np.ndarray]:
    raw = client().hgetall(gradient_key(search_id, generation, parts))
    return {int(part): np.frombuffer(data, dtype="<f8") for part, data in raw.items()}


def reports(search_id: int, generation: int, parts: int) -> dict[str, dict[str, Any]]:
    raw = client().hgetall(report_key(search_id, generation, parts))
    return {name.decode(): json.loads(value) for name, value in raw.items()}


def running_parts(search_id: int, generation: int, parts: int, phase: str, which: list[int]) -> set[int]:
    """The parts among ``which`` whose slot is alive and computing them."""
    if not which:
        return set()
    values = client().mget([part_beat_key(search_id, generation, parts, phase, part) for part in which])
    return {part for part, value in zip(which, values) if value}


def forget_generation(search_id: int, generation: int, parts: int) -> None:
    if generation >= 0:
        client().delete(fitness_key(search_id, generation, parts), gradient_key(search_id, generation, parts),
                        report_key(search_id, generation, parts))


def forget_search(search_id: int) -> None:
    redis_ = client()
    keys = list(redis_.scan_iter(match=f"{_base(search_id)}:*", count=1000))
    if keys:
        redis_.delete(*keys)


# --- the workers ----------------------------------------------------------------------------------------------


def current_state(search_id: int, with_blob: bool = False) -> dict[str, Any] | None:
    """``{"generation", "digest"}`` (and ``blob``) of the weights the loop published; ``None`` before any."""
    fields = ["generation", "digest"] + (["blob"] if with_blob else [])
    values = client().hmget(state_key(search_id), fields)
    if values[0] is None:
        return None
    state = {"generation": int(values[0]), "digest": values[1].decode()}
    if with_blob:
        state["blob"] = values[2]
    return state


def _fitness_json(values: list[float | None]) -> str:
    return json.dumps([None if v is None or not np.isfinite(v) else v for v in values])


def fitness_bytes(values: list[float | None]) -> int:
    """The bytes :func:`put_fitness` writes for ``values``."""
    return len(_fitness_json(values))


def put_fitness(search_id: int, generation: int, parts: int, part: int, values: list[float | None]) -> int:
    """Store part ``part``'s fitness values (NaN as null); returns the bytes written."""
    data = _fitness_json(values)
    with client().pipeline() as pipe:
        key = fitness_key(search_id, generation, parts)
        pipe.hset(key, str(part), data).expire(key, GENERATION_TTL)
        pipe.execute()
    return len(data)


def put_gradient(search_id: int, generation: int, parts: int, part: int, values: np.ndarray) -> int:
    data = np.ascontiguousarray(values, dtype="<f8").tobytes()
    with client().pipeline() as pipe:
        key = gradient_key(search_id, generation, parts)
        pipe.hset(key, str(part), data).expire(key, GENERATION_TTL)
        pipe.execute()
    return len(data)


def put_report(search_id: int, generation: int, parts: int, phase: str, part: int, report: dict[str, Any]) -> None:
    with client().pipeline() as pipe:
        pipe.hset(report_key(search_id, generation, parts), f"{phase}:{part}", json.dumps(report))
        pipe.expire(report_key(search_id, generation, parts), GENERATION_TTL)
        pipe.execute()


def failure_key(search_id: int) -> str:
    return f"{_base(search_id)}:failed"


def put_failure(search_id: int, generation: int, phase: str, part: int, reason: str) -> None:
    """A part raised (out of memory, a bug): the loop fails the search with this reason rather than retry."""
    client().hset(failure_key(search_id), f"{generation}:{phase}:{part}", reason[:2000])


def failures(search_id: int) -> dict[str, str]:
    return {name.decode(): value.decode() for name, value in client().hgetall(failure_key(search_id)).items()}


def clear_failures(search_id: int) -> None:
    client().delete(failure_key(search_id))


def beat_part(search_id: int, generation: int, parts: int, phase: str, part: int, info: dict[str, Any]) -> None:
    client().set(part_beat_key(search_id, generation, parts, phase, part), json.dumps(info),
                 px=int(settings.NAS_HEARTBEAT_TTL * 1000))


def clear_part_beat(search_id: int, generation: int, parts: int, phase: str, part: int) -> None:
    client().delete(part_beat_key(search_id, generation, parts, phase, part))
