"""When to restart a child process that exited: at once-ish the first time, ever later while it keeps dying."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class RestartPolicy:
    """Waits ``first`` seconds before the first restart, twice as long after each further quick death, never
    more than ``cap``; a child that ran ``healthy`` seconds or more before dying starts over at ``first``.

    A child that fails at once (a bad setting, a port taken) then retries about once a ``cap`` instead of
    spinning a core, and one that crashes once a day is back within ``first`` seconds each time.
    """

    first: float = 1.0
    cap: float = 30.0
    healthy: float = 60.0

    def __post_init__(self) -> None:
        if not 0 < self.first <= self.cap:
            raise ValueError(f"RestartPolicy needs 0 < first <= cap (first={self.first}, cap={self.cap})")

    def delay(self, quick_deaths: int) -> float:
        """Seconds to wait after the ``quick_deaths``-th death in a row (1 for the first)."""
        return min(self.cap, self.first * 2 ** max(quick_deaths - 1, 0))


@dataclasses.dataclass
class Backoff:
    """One child's count of quick deaths in a row, under a :class:`RestartPolicy`."""

    policy: RestartPolicy
    quick_deaths: int = 0

    def next_delay(self, ran_for: float) -> float:
        """The wait before restarting a child that died after running ``ran_for`` seconds."""
        if ran_for >= self.policy.healthy:
            self.quick_deaths = 0
        self.quick_deaths += 1
        return self.policy.delay(self.quick_deaths)
