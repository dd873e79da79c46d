"""What the loop of every search kind shares: the lease it holds, the status it obeys and the end it records.

A kind's loop (``webapp.searches.kinds`` names it) subclasses :class:`LoopShell` and writes only its own steps:
``begin`` (once, after the lease is taken), ``step`` (one round of work while the search runs; it returns the
end when there is one), ``drain`` (while the search is stopping; ``True`` once nothing is left to wait for) and
``closing`` (what to record with the end, in the same fenced transaction).
"""
from __future__ import annotations

import logging
import time

from webapp.control import lease, recording
from webapp.control.lease import LeaseLost
from webapp.messaging import dispatch, node_state
from webapp.notifications import outbox
from webapp.searches import broadcast
from webapp.searches.models import Search

log = logging.getLogger(__name__)
Send = dispatch.Send
#: What ``step`` returns to end the search: its final status and the reason in words.
End = tuple[str, str]


class LoopShell:
    """One search's loop: run until the search ends, is stopped, or another loop takes the lease over.

    ``send`` hands its task messages to the workers (by default as the kind's Celery task, :attr:`TASK`; tests
    give their own)."""

    #: The evaluation workers' task this kind's loop sends (``webapp.messaging.dispatch``).
    TASK = dispatch.EVALUATE_BATCH

    def __init__(self, search_id: int, owner: str, send: Send | None = None) -> None:
        self.search_id, self.owner = search_id, owner
        self.send = send if send is not None else dispatch.sender(self.TASK)
        self.search = Search.objects.get(pk=search_id)
        self._renewed = 0.0
        self._idle, self._idle_seen = "", 0.0

    def run(self) -> str:
        """Returns why it ended (``finished``, ``stopped``, ``failed``, ``lease lost``, or the status it found)."""
        try:
            with recording.fenced(self.search_id, self.owner) as search:
                recording.start_accounting(search, time.time())
            self.begin()
            while True:
                status = self.status()
                if status == Search.Status.STOPPING:
                    if self.drain():
                        return self.end(Search.Status.STOPPED, "stopped by its owner")
                    continue
                if status != Search.Status.RUNNING:
                    return status
                self.watch_workers()
                ended = self.step()
                if ended is not None:
                    return self.end(*ended)
        except LeaseLost as error:
            log.warning("search %s: lease taken over; this loop stops (%s)", self.search_id, error)
            return "lease lost"

    def status(self) -> str:
        """The search's status now (the lease renewed first: :class:`LeaseLost` when it was taken over)."""
        self.renew()
        return Search.objects.filter(pk=self.search_id).values_list("status", flat=True).get()

    def renew(self, force: bool = False) -> None:
        self._renewed = lease.keep(self.search_id, self.owner, self._renewed, force)

    def watch_workers(self) -> None:
        """At most once a second: tell the search's page when every worker of its pool becomes drained or
        paused, and again when one takes work (``search.workers``, ``{"idle": why or ""}``), so a search that
        waits for a resume says so instead of looking stuck."""
        now = time.monotonic()
        if now - self._idle_seen < 1.0:
            return
        self._idle_seen = now
        idle = node_state.idle_reason(self.search.config.get("pool", "eval"))
        if idle != self._idle:
            self._idle = idle
            with recording.fenced(self.search_id, self.owner):
                broadcast.notify(self.search_id, "search.workers", {"idle": idle})

    def end(self, status: str, reason: str) -> str:
        """Record the end (with the kind's :meth:`closing`) and tell the pages."""
        with recording.fenced(self.search_id, self.owner) as search:
            self.closing(search)
            ended = broadcast.notify(self.search_id, "search.status", recording.end_search(search, status, reason))
            outbox.search_ended(search, ended.seq)  # the webhooks: queued once this commits
        self.search = search
        log.info("search %s %s %s", self.search_id, status, reason)
        return status

    # --- what a kind writes ------------------------------------------------------------------------------------

    def begin(self) -> None:
        """Once, before the first round (send what a crash left unsent, publish state...)."""

    def step(self) -> End | None:
        """One round of work while the search runs; the end (status, reason) when the search is over."""
        raise NotImplementedError

    def drain(self) -> bool:
        """One round while the search is stopping; ``True`` once it may end as stopped."""
        return True

    def closing(self, search: Search) -> None:
        """What to save with the end, inside its fenced transaction."""
