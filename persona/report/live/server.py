"""Serving `mmb view`: the socket bound first (a taken port is one clear line, not a traceback), then
uvicorn on it; Ctrl-C or SIGTERM end every open stream and stop within a few seconds.

It binds 127.0.0.1 unless told otherwise; an address beyond loopback is said out loud, since
whoever reaches it reads every transcript.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import uvicorn

from persona.report.cost import PriceTable
from persona.report.live.app import MAX_CLIENTS, POLL_S, Hub, create_app
from persona.report.live.pages import Benchmarks, Pages
from persona.report.live.watch import Watcher
from persona.tokens import TokenCounter

log = logging.getLogger(__name__)

SHUTDOWN_S = 3  # connections still open after the streams ended are closed after this


class PortTaken(OSError):
    """The address cannot be bound (in use, or not this machine's)."""


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: any free one); PortTaken says why not in one line."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as e:
        raise PortTaken(f"cannot listen on {host}: {e.strerror}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as e:
        sock.close()
        why = "is in use by another program" if e.errno == 98 else f"cannot be used ({e.strerror})"
        raise PortTaken(f"port {port} on {host} {why}: choose another with --port (--port 0 takes any free one)") from None
    sock.setblocking(False)
    return sock


def beyond_loopback(sock: socket.socket) -> bool:
    address = sock.getsockname()[0]
    try:
        return not ipaddress.ip_address(address.split("%")[0]).is_loopback
    except ValueError:
        return True


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    return f"http://[{shown}]:{port}/" if ":" in shown else f"http://{shown}:{port}/"


class Server(uvicorn.Server):
    """uvicorn's, with its signal handling telling the streams to end first."""

    def __init__(self, config: uvicorn.Config, hub: Hub, started: Callable[[], None] | None):
        super().__init__(config)
        self.hub, self.started_hook = hub, started
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stopped_by: int | None = None  # the signal that stopped it

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        await super().startup(sockets)
        if self.started and self.started_hook:
            self.started_hook()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.stopped_by is None:
            self.stopped_by = sig
        super().handle_exit(sig, frame)
        self.stop_streams()

    def stop_streams(self) -> None:
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.hub.stop)

    def stop(self) -> None:
        """From another thread (tests): as Ctrl-C would."""
        self.should_exit = True
        self.stop_streams()


@dataclass
class Viewer:
    """Everything `mmb view` serves, ready to run on a bound socket."""

    results_dir: Path
    benchmarks: dict[str, Path] | None = None  # run id -> its benchmark folder, from the config
    counter: TokenCounter | None = None
    prices: PriceTable | None = None
    poll_s: float = POLL_S
    max_clients: int = MAX_CLIENTS

    def server(self, started: Callable[[], None] | None = None) -> Server:
        watcher = Watcher(self.results_dir)
        hub = Hub(watcher, self.poll_s, self.max_clients)
        pages = Pages(watcher, Benchmarks(self.benchmarks), self.counter or TokenCounter(), self.prices or PriceTable())
        config = uvicorn.Config(create_app(pages, hub), log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=SHUTDOWN_S)
        return Server(config, hub, started)
