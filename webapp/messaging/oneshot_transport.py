"""What crosses Redis in a one-shot search (seed 003), beside the evaluation packets that carry its work.

| key | kind | written by | meaning |
| --- | --- | --- | --- |
| ``nas:os:<search>:checkpoint`` | string | the worker training the supernet | its last checkpoint (after each epoch): a worker on another host that takes the training over resumes from it |
| ``nas:os:<search>:supernet:<digest>`` | string | the training worker; the loop again on resume | the trained supernet's weights (``evaluators.path_scoring.save_supernet``): every scoring worker fetches them once per digest |

The loop keeps the weights in the database as well (``WeightState``), and publishes them again when a resume finds
Redis without them; the checkpoint is deleted once the supernet is trained.
"""
from __future__ import annotations

from webapp.messaging.transport import client


def _base(search_id: int) -> str:
    return f"nas:os:{search_id}"


def checkpoint_key(search_id: int) -> str:
    return f"{_base(search_id)}:checkpoint"


def supernet_key(search_id: int, digest: str) -> str:
    return f"{_base(search_id)}:supernet:{digest}"


def put_checkpoint(search_id: int, data: bytes) -> None:
    client().set(checkpoint_key(search_id), data)


def checkpoint(search_id: int) -> bytes | None:
    return client().get(checkpoint_key(search_id))


def put_supernet(search_id: int, digest: str, data: bytes) -> None:
    client().set(supernet_key(search_id, digest), data)


def supernet(search_id: int, digest: str) -> bytes | None:
    return client().get(supernet_key(search_id, digest))


def has_supernet(search_id: int, digest: str) -> bool:
    return bool(client().exists(supernet_key(search_id, digest)))


def forget_checkpoint(search_id: int) -> None:
    client().delete(checkpoint_key(search_id))


def forget_search(search_id: int) -> None:
    """Every key of the search (it was deleted)."""
    redis_ = client()
    keys = list(redis_.scan_iter(f"{_base(search_id)}:*"))
    if keys:
        redis_.delete(*keys)
