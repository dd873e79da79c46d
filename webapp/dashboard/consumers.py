"""The live search page's websocket: the search's events, in order, with a catch-up after a reconnect.

Protocol (JSON both ways):
- the page sends ``{"type": "resume", "after": SEQ}`` (the last sequence number it has; 0 for none) on each
  (re)connect, and again whenever it sees a gap in the numbers;
- the server answers ``{"type": "events", "events": [...]}`` with the logged events after SEQ, then relays the
  search's group messages as they come in the same shape. The page ignores numbers it has already applied, so
  an event both caught up and relayed is applied once. When more events are missing than one catch-up holds, the
  server sends ``{"type": "resync"}`` and the page loads a new snapshot over HTTP.

Origins other than the allowed hosts are refused by ``AllowedHostsOriginValidator`` (``webapp.asgi``);
anonymous users and users who may not see the search are refused here (the handshake is closed with 403).
"""
from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from webapp.searches import broadcast
from webapp.services.queries import visible_searches

CATCH_UP = 5000


@database_sync_to_async
def _may_watch(user, search_id: int) -> bool:
    return visible_searches(user).filter(pk=search_id).exists()


@database_sync_to_async
def _events_after(search_id: int, seq: int) -> list[dict]:
    return broadcast.events_after(search_id, seq, limit=CATCH_UP)


class SearchConsumer(AsyncJsonWebsocketConsumer):
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
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs) -> None:
        if not isinstance(content, dict) or content.get("type") != "resume":
            await self.send_json({"type": "error", "error": 'Send {"type": "resume", "after": SEQ}.'})
            return
        try:
            after = int(content.get("after", 0))
        except (TypeError, ValueError):
            await self.send_json({"type": "error", "error": "`after` must be an integer."})
            return
        events = await _events_after(self.search_id, after)
        await self.send_json({"type": "events", "events": events})
        if len(events) >= CATCH_UP:
            await self.send_json({"type": "resync"})

    async def search_events(self, message: dict) -> None:
        """A group message from ``broadcast.publish``."""
        await self.send_json({"type": "events", "events": message["events"]})
