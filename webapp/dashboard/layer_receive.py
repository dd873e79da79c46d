"""A channel-layer receive that a consumer can always abandon.

Channels ends a consumer by cancelling its pending ``channel_layer.receive()`` and waiting for it to finish. With
Redis gone, or just back, that receive sits in redis-py's retries of ``BZPOPMIN``, which can lose the
cancellation: the receive then runs on, and the consumer waits on it for ever, so its socket is never closed with
4013 and the viewer sees nothing until the web process is restarted (``tests/dashboard/test_live_burst.py``
caught it in about one Redis restart in ten).

:func:`abandonable` runs the layer's receive as a task of its own and waits on it through ``asyncio.shield``: a
cancelled consumer asks that task to stop and waits for it as Channels does, but for :data:`PATIENCE` seconds at
most (a receive that listens ends at once). A receive that ignored its cancellation keeps serving the process's
other sockets: it moves every message it pops into their buffers, as any receive of ``channels_redis`` does, and
ends with the next message.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

#: Seconds a cancelled consumer waits for its receive to end before it leaves it behind.
PATIENCE = 2.0


def abandonable(receive: Callable[[], Awaitable[dict]]) -> Callable[[], Awaitable[dict]]:
    """``receive`` (the consumer's ``channel_receive``), returning when it does; cancelled, it cancels the receive
    and waits :data:`PATIENCE` seconds at most for it to end."""

    async def receive_or_leave() -> dict:
        task = asyncio.ensure_future(receive())
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.cancel()
            task.add_done_callback(_consume_outcome)
            await asyncio.wait([task], timeout=PATIENCE)
            raise

    return receive_or_leave


def _consume_outcome(task: asyncio.Task) -> None:
    """An abandoned receive's end: its result or error has no reader (asyncio would log it as never retrieved)."""
    if not task.cancelled():
        task.exception()
