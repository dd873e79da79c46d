"""The live search page's websocket: the search's events, in order, with a catch-up after a reconnect.

Protocol (JSON both ways):
- the page sends ``{"type": "resume", "after": SEQ}`` (the last sequence number it has; 0 for none) on each
  (re)connect, and again whenever it sees a gap in the numbers;
- the server answers ``{"type": "events", "events": [...]}`` with the logged events after SEQ, then relays the
  search's group messages as they come in the same shape. The page ignores numbers it has already applied, so
  an event both caught up and relayed is applied once. When more events are missing than one catch-up holds, the
  server sends ``{"type": "resync"}`` and the page loads a new snapshot over HTTP.

Other origins than the site's own are refused by ``SameOriginValidator`` (``webapp.asgi``); anonymous users
and users who may not see the search are refused here (the handshake is refused with 403).

When the channel layer (Redis) fails, during a handshake or later, the socket is closed with code 4013 ("try
again later") instead of failing with a 500: the page reconnects with back-off and catches up from the log.
Whatever ends a connection, its group membership is discarded, so a group holds no dead members.
"""
from __future__ import annotations

import asyncio
import logging

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from redis.exceptions import RedisError

from webapp.dashboard.layer_receive import abandonable
from webapp.searches import broadcast
from webapp.services.queries import visible_searches

log = logging.getLogger(__name__)

CATCH_UP = 5000
#: Sequence numbers are 64-bit integers in the database.
MAX_SEQ = 2**63 - 1
#: "Try again later": the server cannot serve the socket right now. RFC 6455's own code (1013) is refused by
#: daphne's websocket library (it sends only 1000 and 3000-4999), so the application range echoes it.
TRY_AGAIN_LATER = 4013
#: What a briefly unreachable Redis raises (a refused or timed-out connection, a pool without a free one).
LAYER_ERRORS = (RedisError, OSError, asyncio.TimeoutError)


@database_sync_to_async
def _may_watch(user, search_id: int) -> bool:
    return visible_searches(user).filter(pk=search_id).exists()


@database_sync_to_async
def _events_after(search_id: int, seq: int) -> list[dict]:
    return broadcast.events_after(search_id, seq, limit=CATCH_UP)


class SearchConsumer(AsyncJsonWebsocketConsumer):
    joined = False
    accepted = False

    @property
    def channel_receive(self):
        return self._channel_receive

    @channel_receive.setter
    def channel_receive(self, receive) -> None:
        # Channels sets it on each call and waits for it when the consumer ends: see layer_receive why it must not
        self._channel_receive = abandonable(receive)

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        except LAYER_ERRORS as error:
            log.warning("search %s: a websocket closed with %d, the channel layer failed: %r",
                        getattr(self, "search_id", "?"), TRY_AGAIN_LATER, error)
            await self._close_politely()
        finally:
            await self._leave()

    async def connect(self) -> None:
        self.search_id = int(self.scope["url_route"]["kwargs"]["search_id"])
        self.group = broadcast.group_name(self.search_id)
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not await _may_watch(user, self.search_id):
            await self.close()
            return
        # Join the group before any catch-up, so nothing published in between is missed (duplicates are
        # harmless: the page skips numbers it has).
        await self.channel_layer.group_add(self.group, self.channel_name)
        self.joined = True
        await self.accept()
        self.accepted = True

    async def disconnect(self, code: int) -> None:
        await self._leave()

    async def _leave(self) -> None:
        """Leave the group, retrying briefly if Redis is away (a member left behind would be sent every event of
        the search until the group expires)."""
        if not self.joined:
            return
        self.joined = False
        for attempt in range(3):
            try:
                await self.channel_layer.group_discard(self.group, self.channel_name)
                return
            except LAYER_ERRORS as error:
                last = error
                await asyncio.sleep(0.5 * (attempt + 1))
        log.warning("search %s: could not leave the group %s: %r", self.search_id, self.group, last)

    async def _close_politely(self) -> None:
        """Close with "try again later"; a handshake not yet answered is accepted first, so that the page sees
        the code (a refused handshake shows a browser only a failure)."""
        try:
            if not self.accepted:
                await self.base_send({"type": "websocket.accept"})
                self.accepted = True
            await self.base_send({"type": "websocket.close", "code": TRY_AGAIN_LATER})
        except Exception as error:  # noqa: BLE001 - the client may be gone already; nothing more to tell it
            log.debug("could not close a websocket politely: %r", error)

    async def receive_json(self, content, **kwargs) -> None:
        if not isinstance(content, dict) or content.get("type") != "resume":
            await self.send_json({"type": "error", "error": 'Send {"type": "resume", "after": SEQ}.'})
            return
        try:
            after = int(content.get("after", 0))
        except (TypeError, ValueError, OverflowError):
            after = -1
        if not 0 <= after <= MAX_SEQ:
            await self.send_json({"type": "error", "error": f"`after` must be an integer from 0 to {MAX_SEQ}."})
            return
        events = await _events_after(self.search_id, after)
        await self.send_json({"type": "events", "events": events})
        if len(events) >= CATCH_UP:
            await self.send_json({"type": "resync"})

    async def search_events(self, message: dict) -> None:
        """A group message from ``broadcast.publish``."""
        await self.send_json({"type": "events", "events": message["events"]})
