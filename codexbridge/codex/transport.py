"""The seam between the client and the bytes: a transport is a pair of text streams.

    Transport   send(text) / recv() -> text / close(); recv raises TransportClosed at the end
    Connector   async (url, headers) -> Transport
    connect_websocket   the real one: ws://HOST:PORT or unix://PATH (python-websockets)

(Tests that need no socket pair two in-memory ends: tests/support/memory_appserver.py.)

`observe(wrap)` lets a caller see every transport the default connector makes (the test
suite's schema guard checks each outgoing frame this way, in-process and in CLI
subprocesses); it returns the function that undoes it. Nothing else in codexbridge
touches the bytes.
"""

from __future__ import annotations

import asyncio
import os
import ssl  # (websockets' client imports it already)
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from websockets.asyncio.client import ClientConnection, unix_connect
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.frames import CloseCode

from ..errors import ConnectError
from ..host.limits import DEFAULT_FRAME_MAX, FRAME_MAX_ENV, frame_max
from ..host.loopback import loopback_url

CONNECT_TIMEOUT = 10.0


class TransportClosed(Exception):
    """The other end is gone; `str(exc)` says why."""


class MessageTooBig(TransportClosed):
    """The app-server sent one message over `$CODEX_BRIDGE_FRAME_MAX` bytes: the
    connection was closed (1009) before it was read into memory."""


def too_big(limit: int) -> str:
    """What to tell the user about a message over the frame cap."""
    return (f"the app-server sent one message over {limit:,} bytes, the most codexbridge "
            f"reads in one piece (${FRAME_MAX_ENV}, default {DEFAULT_FRAME_MAX:,}); it "
            "closed the connection instead of holding that in memory. The turn itself "
            "goes on in codex (the Codex TUI shows it). If the server is yours and a "
            f"message that big is expected (a huge reply or history page), raise "
            f"{FRAME_MAX_ENV}")


class Transport(Protocol):
    async def send(self, text: str) -> None: ...

    async def recv(self) -> str | bytes: ...

    async def close(self) -> None: ...


Connector = Callable[[str, Mapping[str, str] | None], Awaitable[Transport]]
Wrapper = Callable[[Transport], Transport]

_observers: list[Wrapper] = []


def observe(wrap: Wrapper) -> Callable[[], None]:
    """Wrap every transport `connect` makes from now on; returns the undo."""
    _observers.append(wrap)

    def undo() -> None:
        if wrap in _observers:
            _observers.remove(wrap)

    return undo


class _WebSocket:
    """A python-websockets connection as a Transport."""

    def __init__(self, ws: ClientConnection, limit: int) -> None:
        self._ws = ws
        self._limit = limit

    async def send(self, text: str) -> None:
        try:
            await self._ws.send(text)
        except ConnectionClosed as exc:
            raise TransportClosed(f"connection closed: {exc}") from exc

    async def recv(self) -> str | bytes:
        try:
            return await self._ws.recv()
        except ConnectionClosed as exc:
            if exc.sent is not None and exc.sent.code == CloseCode.MESSAGE_TOO_BIG:
                raise MessageTooBig(too_big(self._limit)) from exc
            raise TransportClosed(f"connection closed ({exc})") from exc

    async def close(self) -> None:
        await self._ws.close()


async def connect_websocket(url: str, headers: Mapping[str, str] | None = None, *,
                            ca_file: str | None = None, ca_dir: str | None = None
                            ) -> Transport:
    """Open `ws://HOST:PORT` (or `wss://`) or `unix://PATH`; ConnectError if it fails.
    `ca_file`/`ca_dir`: what a wss:// server's certificate is checked against instead
    of this process's SSL_CERT_FILE/SSL_CERT_DIR (the same meaning: only these).

    One message is read whole into memory (and then parsed), so its size is capped:
    `$CODEX_BRIDGE_FRAME_MAX` (host/limits.py). A bigger one is refused as its
    header arrives (MessageTooBig), not after it filled the memory."""
    extra = dict(headers) if headers else None
    limit = frame_max(os.environ)
    try:
        if url.startswith("unix://"):
            path = url[len("unix://"):]
            if not path:
                raise ConnectError("a unix:// URL needs a socket path: unix:///path/to/sock")
            # codex's unix listener drops clients that offer permessage-deflate.
            ws = await asyncio.wait_for(unix_connect(
                path, uri="ws://localhost/", compression=None, additional_headers=extra,
                max_size=limit), CONNECT_TIMEOUT)
        else:
            # websockets routes ws:// through the environment's proxy by default
            # (ALL_PROXY=… broke `talk list` against a loopback serve); a loopback
            # app-server is never reached through a proxy.
            tls: dict[str, Any] = {}  # no `ssl` key: websockets makes its default
            if url.startswith("wss://") and (ca_file or ca_dir):
                tls["ssl"] = ssl.create_default_context(cafile=ca_file, capath=ca_dir)
            ws = await asyncio.wait_for(ws_connect(
                url, compression=None, additional_headers=extra, max_size=limit,
                open_timeout=CONNECT_TIMEOUT, proxy=None if loopback_url(url) else True,
                **tls), CONNECT_TIMEOUT)
    except (TimeoutError, OSError, InvalidHandshake, InvalidURI) as exc:
        raise ConnectError(f"cannot connect to the app-server at {url}: "
                           f"{exc or type(exc).__name__}; is it running (codex's own "
                           "daemon, or `codexbridge serve`)?") from exc
    return _WebSocket(ws, limit)


def observed(transport: Transport) -> Transport:
    """`transport` as every `observe` wrapper wants to see it."""
    for wrap in list(_observers):
        transport = wrap(transport)
    return transport


async def connect(url: str, headers: Mapping[str, str] | None = None, *,
                  ca_file: str | None = None, ca_dir: str | None = None) -> Transport:
    """The default connector: a WebSocket, seen by every `observe` wrapper."""
    return observed(await connect_websocket(url, headers, ca_file=ca_file, ca_dir=ca_dir))
