"""The evaluation task's message: seed 000's packet of individuals, signed by the loop and checked by workers.

Anyone who can write to Redis could push a task onto an evaluation queue. A worker therefore runs only packets
that carry a valid HMAC-SHA256 of their canonical JSON under ``NAS_TASK_KEY`` (by default ``SECRET_KEY``: every
host of one installation shares it), and whose every individual names a known space and a genome that space
accepts. Anything else is a :class:`MalformedPacket`: logged by the worker, and nothing changes (no start is
counted, no message reaches the loop). Pickled messages never get this far: Celery accepts JSON only.
"""
from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from django.conf import settings

from nas.packet import REQUEST, Packet
from nas.spaces import space_from_config

#: Fields every individual of a packet carries.
INDIVIDUAL_FIELDS = ("search", "individual", "number", "key", "genome", "space", "dataset", "training", "evaluation")


class MalformedPacket(ValueError):
    """A task message that is not a signed packet of valid individuals."""


def _canonical(data: dict[str, Any]) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def sign(data: dict[str, Any]) -> str:
    key = (settings.NAS_TASK_KEY or settings.SECRET_KEY).encode()
    return hmac.new(key, _canonical(data), hashlib.sha256).hexdigest()


def build(individuals: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    """The packet handing ``individuals`` to whichever slot applies for work next, and its signature.

    Table 2 of seed 000 types a packet by the exchange it belongs to; the server's reply to a node that applies
    for new data carries the raw individuals, so it goes out as that exchange's type, :data:`REQUEST`. (Here a
    slot applies by pulling its queue when it is free, Celery's prefetch of one.)"""
    data = Packet(REQUEST, len(individuals), individuals).to_dict()
    return data, sign(data)


def _check_individual(position: int, individual: dict[str, Any]) -> None:
    missing = [field for field in INDIVIDUAL_FIELDS if field not in individual]
    if missing:
        raise MalformedPacket(f"individual {position} lacks {', '.join(missing)}")
    if not all(isinstance(individual[f], int) and not isinstance(individual[f], bool) for f in ("search", "individual")):
        raise MalformedPacket(f"individual {position}: search and individual must be integer ids")
    try:
        space = space_from_config(individual["space"])
    except (TypeError, ValueError) as error:
        raise MalformedPacket(f"individual {position}: unknown or invalid space: {error}") from None
    try:
        space.validate(individual["genome"])
    except (TypeError, ValueError) as error:
        raise MalformedPacket(f"individual {position}: genome rejected by space {space.name}: {error}") from None


def verify(data: Any, signature: Any, what: str = "a packet") -> dict[str, Any]:
    """``data``, if it is a JSON object that this installation's loop signed (every reader of a signed message
    checks it here); :class:`MalformedPacket` saying why not otherwise."""
    if not isinstance(data, dict):
        raise MalformedPacket(f"{what} must be a JSON object (got {type(data).__name__})")
    try:
        expected = sign(data)
    except (TypeError, ValueError) as error:
        raise MalformedPacket(f"not JSON-serialisable: {error}") from None
    if not isinstance(signature, str) or not hmac.compare_digest(signature, expected):
        raise MalformedPacket("bad or missing signature: not sent by this installation's search loop "
                              "(do the worker and the control worker share NAS_TASK_KEY / SECRET_KEY?)")
    return data


def parse(data: Any, signature: Any) -> Packet:
    """The packet, if it is signed and well formed; :class:`MalformedPacket` saying why not otherwise."""
    verify(data, signature)
    try:
        packet = Packet.from_dict(data)
    except (TypeError, ValueError) as error:
        raise MalformedPacket(str(error)) from None
    for position, individual in enumerate(packet.ind_set):
        _check_individual(position, individual)
    return packet
