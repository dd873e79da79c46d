"""The slots a search's loop may use, and the slot time it hands to the search's accounting.

One object per loop: the live slots of its pool that take work (read from Redis at most once a second; a drained or
paused node's slots do not count), how many of them this search can use now (idle, or working for it), in slots and
in devices, and the two clocks that sample those counts between hand-overs to ``webapp.searches.accounting``.
"""
from __future__ import annotations

import time
from typing import Any

from webapp.messaging import node_state, transport
from webapp.searches import accounting

#: How often the loop hands the slot time it sampled to the search's accounting (seconds).
ACCOUNT_EVERY = 5.0


class SlotTime:
    def __init__(self, search_id: int, pool: str) -> None:
        self.search_id = search_id
        self.pool = pool
        self._seen = 0.0
        self._live: list[dict[str, Any]] = []
        self._clock = accounting.SlotClock(time.time())
        self._device_clock = accounting.SlotClock(time.time())
        self.handed = time.time()

    def live_slots(self) -> list[dict[str, Any]]:
        """The live slots of the pool that take work (a drained or paused node's do not count: no room is made, no
        packet split, no slot time accounted for them)."""
        now = time.monotonic()
        if now - self._seen > 1.0:
            live = transport.live_slots(self.pool)
            states = node_state.states(sorted({slot["node"] for slot in live}))
            self._live = [slot for slot in live if node_state.takes_work(states.get(slot["node"], node_state.ACTIVE))]
            self._seen = now
        return self._live

    def _usable(self) -> list[dict[str, Any]]:
        return [slot for slot in self.live_slots()
                if not slot.get("current") or slot["current"].get("search") == self.search_id]

    def available(self) -> int:
        """The live slots this search can use now: idle ones, and those working for it."""
        return len(self._usable())

    def available_devices(self) -> float:
        """As :meth:`available`, in devices: a gang worker's slot (device ``cpux4``) weighs devices / slots."""
        total = 0.0
        for slot in self._usable():
            _, _, count = str(slot.get("device", "")).partition("x")
            total += int(count) / max(int(slot.get("slots", 1)), 1) if count.isdigit() else 1.0
        return total

    def sample(self, now: float) -> bool:
        """Sample what the search can use now; true when a hand-over is due."""
        self._clock.sample(now, self.available())
        self._device_clock.sample(now, self.available_devices())
        return now - self.handed > ACCOUNT_EVERY

    def hand_over(self, stats: dict[str, Any], now: float) -> None:
        """Sample up to ``now`` and put what was sampled into the search's ``stats`` (the caller saves them): before
        results are recorded, so each point of the speedup's history counts the slot time up to its own result."""
        self.sample(now)
        accounting.add_device_time(stats, self._device_clock.take())
        accounting.add_slot_time(stats, self._clock.take(), as_of=now)
        self.handed = now
