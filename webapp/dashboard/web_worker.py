"""One daphne process of ``manage.py web``, whose connections come from its parent instead of a port.

The parent (``webapp.dashboard.server``) accepts every connection and hands each to its daphne processes in
turn, over a Unix socket (``SCM_RIGHTS``); this process adopts each into daphne's HTTP factory, where it is
served exactly as one daphne accepted itself (pages, the API, websockets). Run as daphne is, with ``--fd``
naming that Unix socket::

    python -m webapp.dashboard.web_worker --fd 3 webapp.asgi:application
"""
from __future__ import annotations

import os
import socket

from daphne.cli import CommandLineInterface
from daphne.server import Server  # first: it installs the asyncio reactor
from twisted.internet import reactor
from twisted.internet.interfaces import IReadDescriptor
from zope.interface import implementer

#: Connections received at most in one read of the Unix socket.
BATCH = 64


@implementer(IReadDescriptor)
class Handoff:
    """The reading end of the parent's Unix socket: each message carries one accepted connection."""

    def __init__(self, channel: socket.socket, server: Server) -> None:
        self.channel = channel
        self.server = server

    def fileno(self) -> int:
        return self.channel.fileno()

    def logPrefix(self) -> str:  # noqa: N802 (Twisted's name)
        return "handoff"

    def doRead(self) -> None:  # noqa: N802
        while True:
            try:
                message, fds, _, _ = socket.recv_fds(self.channel, BATCH, BATCH)
            except BlockingIOError:
                return
            if not message and not fds:  # the parent is gone: so is this process's work
                reactor.stop()
                return
            for fd in fds:
                try:
                    # Twisted takes a duplicate; the connection lives on in the reactor after this close.
                    reactor.adoptStreamConnection(fd, socket.AF_INET, self.server.http_factory)
                except OSError:
                    pass  # the client left already
                finally:
                    os.close(fd)

    def connectionLost(self, reason) -> None:  # noqa: N802
        reactor.removeReader(self)


class HandoffServer(Server):
    """daphne's server, listening on nothing: its ``fd:`` endpoint names the Unix socket connections come from."""

    def __init__(self, *args, endpoints=None, **kwargs) -> None:
        (endpoint,) = endpoints
        if not endpoint.startswith("fd:fileno="):
            raise SystemExit("web_worker: run with --fd (the Unix socket the parent hands connections over)")
        self.handoff_fd = int(endpoint.split("=", 1)[1].split(":")[0])
        super().__init__(*args, endpoints=endpoints, **kwargs)
        self.endpoints = []  # after daphne's check that there is one: this process listens on none
        reactor.callWhenRunning(self.receive)

    def receive(self) -> None:
        channel = socket.socket(fileno=self.handoff_fd)
        channel.setblocking(False)
        reactor.addReader(Handoff(channel, self))


class HandoffCommandLine(CommandLineInterface):
    server_class = HandoffServer


if __name__ == "__main__":
    HandoffCommandLine.entrypoint()
