"""What an evaluation worker tells a search's loop: one type per message, each with a version.

Workers push these as JSON to the search's results list in Redis (``transport.push``); the loop takes them in
arrival order, parses each once (:func:`parse`) and records it. Every message says which evaluation it is about
and who sends it (:class:`Origin`), then its own fields:

| type | sent when | its own fields |
| --- | --- | --- |
| ``started`` | a slot starts evaluating an individual | ``attempt``, ``time`` |
| ``progress`` | a training reports an intermediate value | ``attempt``, ``step``, ``epoch``, ``metrics``, ``time`` |
| ``result`` | the evaluation ended, well or not | ``attempt``, ``started``, ``finished``, ``duration``, ``packet_bytes``, ``result`` |
| ``skipped`` | a slot dropped the evaluation (a stopped search, a paused node, a data set it cannot read) | ``reason``, ``failure``, ``attempt`` |

A ``skipped`` message's ``failure`` is empty, or ``data_unreadable`` when this worker can neither read nor
fetch the search's data set (the loop re-places the evaluation on a worker that can); its ``attempt`` is the
attempt it ends, 0 when none was counted. Both may be absent (a worker of an earlier release): a field with a
default is optional.

A ``result`` is seed 000's "replied processed data" for one individual: a worker reports each individual of
a packet as soon as it is evaluated, so the loop learns of it at once rather than at the end of the packet.

A message that names its evaluation but carries a result the loop cannot read becomes a failed result
(``malformed``), so the individual ends with its reason instead of being lost. A new kind of message is one more
dataclass here, registered in :data:`TYPES`, and one handler in the loop.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar, Union

from evaluators.result import EvaluationResult, MalformedResult

#: The wire format's version; a message of another version is refused (a worker of another release).
VERSION = 1


class MalformedMessage(ValueError):
    """A message the loop cannot read: logged and dropped (it names no evaluation it could be retried as)."""


@dataclasses.dataclass(frozen=True)
class Origin:
    """The evaluation a message is about, and the slot that sends it."""

    search: int
    individual: int  #: the individual's database id
    number: int  #: its number in the search
    task_id: str
    node: str
    device: str
    slot: str  #: ``node/device/index``


@dataclasses.dataclass(frozen=True)
class Started:
    type: ClassVar[str] = "started"
    origin: Origin
    attempt: int
    time: float


@dataclasses.dataclass(frozen=True)
class Progress:
    type: ClassVar[str] = "progress"
    origin: Origin
    attempt: int
    step: int  #: training steps so far
    epoch: float  #: epochs so far (fractional between epoch ends)
    metrics: dict[str, float]  #: e.g. ``val_accuracy``, ``val_loss``, ``train_loss``
    time: float


@dataclasses.dataclass(frozen=True)
class Result:
    type: ClassVar[str] = "result"
    origin: Origin
    attempt: int
    started: float
    finished: float
    duration: float
    packet_bytes: int  #: this individual's share of its packet
    result: EvaluationResult


@dataclasses.dataclass(frozen=True)
class Skipped:
    type: ClassVar[str] = "skipped"
    origin: Origin
    reason: str
    failure: str = ""  #: ``data_unreadable``: this worker cannot read the data set (else empty)
    attempt: int = 0  #: the attempt this ends (0: none was counted)


Message = Union[Started, Progress, Result, Skipped]
TYPES: dict[str, type] = {cls.type: cls for cls in (Started, Progress, Result, Skipped)}
_ORIGIN = tuple(field.name for field in dataclasses.fields(Origin))


def to_dict(message: Message) -> dict[str, Any]:
    """The flat JSON object a worker pushes: ``type``, ``version``, the origin's fields, then the message's."""
    data: dict[str, Any] = {"type": message.type, "version": VERSION, **dataclasses.asdict(message.origin)}
    for field in dataclasses.fields(message):
        if field.name == "origin":
            continue
        value = getattr(message, field.name)
        data[field.name] = value.to_dict() if isinstance(value, EvaluationResult) else value
    return data


def _check(name: str, value: Any, kind: Any) -> Any:
    if kind in ("int", int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise MalformedMessage(f"`{name}` must be an integer (got {value!r})")
        return value
    if kind in ("float", float):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise MalformedMessage(f"`{name}` must be a finite number (got {value!r})")
        return float(value)
    if kind in ("str", str):
        if not isinstance(value, str):
            raise MalformedMessage(f"`{name}` must be a string (got {value!r})")
        return value
    if kind == "dict[str, float]":
        if not isinstance(value, dict):
            raise MalformedMessage(f"`{name}` must be an object of numbers (got {value!r})")
        return {str(k): _check(f"{name}.{k}", v, float) for k, v in value.items()}
    if kind == "EvaluationResult":
        try:
            return EvaluationResult.from_dict(value)
        except MalformedResult as error:  # the individual is known: it fails with the reason, it is not lost
            return EvaluationResult.failed("malformed", f"the worker's result could not be read: {error}")
    raise AssertionError(f"no check for {kind!r}")


def parse(data: Any) -> Message:
    """The typed message, or :class:`MalformedMessage` saying what is wrong."""
    if not isinstance(data, dict):
        raise MalformedMessage(f"a message must be a JSON object (got {type(data).__name__})")
    cls = TYPES.get(data.get("type"))
    if cls is None:
        raise MalformedMessage(f"unknown message type {data.get('type')!r}; the types are {', '.join(TYPES)}")
    if data.get("version", VERSION) != VERSION:
        raise MalformedMessage(f"message version {data.get('version')!r} is not {VERSION}: is the worker up to date?")
    missing = [name for name in _ORIGIN if name not in data]
    if missing:
        raise MalformedMessage(f"a {cls.type} message lacks {', '.join(missing)}")
    origin = Origin(**{field.name: _check(field.name, data[field.name], field.type)
                       for field in dataclasses.fields(Origin)})
    values: dict[str, Any] = {"origin": origin}
    for field in dataclasses.fields(cls):
        if field.name == "origin":
            continue
        if field.name not in data:
            if field.default is not dataclasses.MISSING:
                continue
            raise MalformedMessage(f"a {cls.type} message lacks {field.name}")
        values[field.name] = _check(field.name, data[field.name], field.type)
    return cls(**values)
