"""Websocket viewers of one search, in a process of their own, driven by a test through JSON lines.

autobahn's asyncio client (the dashboard benchmark's) cannot run in the test process, which has imported
daphne's Twisted flavour of autobahn. A test starts this module (:class:`Viewers` does) and sends commands on
its stdin, one JSON object a line; each gets one JSON line back on stdout:

- ``{"op": "open", "count": N, "origin": ORIGIN or null, "timeout": S}``: N handshakes at once ->
  ``{"opened": [ids], "failed": {reason: count}}``
- ``{"op": "resume", "ids": [...], "after": SEQ}``: each still open sends ``{"type": "resume", "after": SEQ}``
  -> ``{}``
- ``{"op": "answered", "ids": [...], "timeout": S}``: until each got a message or was closed ->
  ``{"answered": [ids], "closed": {id: code}}``
- ``{"op": "expect", "ids": [...], "seqs": [...], "timeout": S}``: until each has every event numbered in
  ``seqs`` -> ``{"missing": [ids that lack some]}``
- ``{"op": "closed", "ids": [...], "timeout": S}``: until each is closed -> ``{"codes": {id: code or null}}``
- ``{"op": "close", "ids": [...], "timeout": S}``: each closes (1000), then as ``closed``.
- ``{"op": "delays", "since": T0, "until": T1}``: how long after it was written (its ``time``) each viewer got
  each event written between the epoch seconds T0 and T1, in whole milliseconds ->
  ``{"delays": {ms: count}, "closed": N}`` (N: viewers closed by then; the benchmark's measure of events).

Run as ``python -m tests.dashboard.ws_viewers HOST:PORT SEARCH_ID COOKIE``.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import resource
import sys
import time
from collections import Counter

from autobahn.asyncio.websocket import WebSocketClientFactory, WebSocketClientProtocol
from autobahn.exception import Disconnected


class Viewer(WebSocketClientProtocol):
    def __init__(self) -> None:
        super().__init__()
        loop = asyncio.get_running_loop()
        self.opened: asyncio.Future = loop.create_future()
        self.closed: asyncio.Future = loop.create_future()
        self.seqs: set[int] = set()
        #: (the event's time, seconds from then to its arrival), once per event.
        self.delays: list[tuple[float, float]] = []
        self.messages = 0
        self.failure = ""

    def onOpen(self) -> None:
        self.opened.set_result(True)

    def onMessage(self, payload: bytes, is_binary: bool) -> None:
        self.messages += 1
        now = time.time()
        for event in json.loads(payload).get("events", []):
            if event["seq"] not in self.seqs:  # a page applies an event once, caught up or relayed
                self.seqs.add(event["seq"])
                if "time" in event:
                    self.delays.append((event["time"], now - event["time"]))

    def onClose(self, was_clean: bool, code, reason) -> None:
        if not self.opened.done():
            self.failure = self.wasNotCleanReason or reason or f"closed with {code}"
            self.opened.set_result(False)
        if not self.closed.done():
            self.closed.set_result(code)


class Session:
    def __init__(self, address: str, search_id: int, cookie: str) -> None:
        self.address, self.search_id, self.cookie = address, search_id, cookie
        self.viewers: dict[int, Viewer] = {}
        self.numbers = itertools.count()

    async def _open_one(self, origin: str, timeout: float) -> Viewer | str:
        host, port = self.address.split(":")
        factory = WebSocketClientFactory(f"ws://{self.address}/ws/searches/{self.search_id}/", origin=origin,
                                         headers={"Cookie": self.cookie})
        factory.setProtocolOptions(openHandshakeTimeout=timeout, closeHandshakeTimeout=timeout, autoPingInterval=0)
        factory.protocol = Viewer
        try:
            _, viewer = await asyncio.get_running_loop().create_connection(factory, host, int(port))
            await asyncio.wait_for(asyncio.shield(viewer.opened), timeout)
        except (OSError, asyncio.TimeoutError) as error:
            return f"connection: {error!r}"
        return viewer if viewer.opened.result() else viewer.failure

    async def open(self, count: int, origin: str | None, timeout: float) -> dict:
        results = await asyncio.gather(*(self._open_one(origin or f"http://{self.address}", timeout)
                                         for _ in range(count)))
        opened = []
        for result in results:
            if isinstance(result, Viewer):
                number = next(self.numbers)
                self.viewers[number] = result
                opened.append(number)
        return {"opened": opened, "failed": dict(Counter(r for r in results if isinstance(r, str)))}

    async def resume(self, ids: list[int], after: int) -> dict:
        for number in ids:
            try:
                self.viewers[number].sendMessage(json.dumps({"type": "resume", "after": after}).encode())
            except Disconnected:  # the server closed it already: ``answered`` reports the close
                pass
        return {}

    async def _until(self, condition, timeout: float) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while not condition() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)

    async def answered(self, ids: list[int], timeout: float) -> dict:
        viewers = [self.viewers[n] for n in ids]
        await self._until(lambda: all(v.messages or v.closed.done() for v in viewers), timeout)
        return {"answered": [n for n in ids if self.viewers[n].messages],
                "closed": {n: self.viewers[n].closed.result() for n in ids if self.viewers[n].closed.done()}}

    async def expect(self, ids: list[int], seqs: list[int], timeout: float) -> dict:
        wanted = set(seqs)
        await self._until(lambda: all(wanted <= self.viewers[n].seqs for n in ids), timeout)
        return {"missing": [n for n in ids if not wanted <= self.viewers[n].seqs]}

    async def closed(self, ids: list[int], timeout: float) -> dict:
        await self._until(lambda: all(self.viewers[n].closed.done() for n in ids), timeout)
        return {"codes": {n: self.viewers[n].closed.result() if self.viewers[n].closed.done() else None
                          for n in ids}}

    async def delays(self, since: float, until: float) -> dict:
        counts = Counter(int(delay * 1000) for viewer in self.viewers.values()
                         for written, delay in viewer.delays if since <= written <= until)
        return {"delays": counts, "closed": sum(viewer.closed.done() for viewer in self.viewers.values())}

    async def close(self, ids: list[int], timeout: float) -> dict:
        for number in ids:
            self.viewers[number].sendClose(1000)
        return await self.closed(ids, timeout)


async def serve(session: Session) -> None:
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        command = json.loads(line)
        answer = await getattr(session, command.pop("op"))(**command)
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    address, search_id, cookie = sys.argv[1:4]
    asyncio.run(serve(Session(address, int(search_id), cookie)))
