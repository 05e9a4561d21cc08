"""The asyncio JSON-RPC client for `codex app-server` — the one owner of a connection.

The bytes go through a Transport (`codex/transport.py`: a WebSocket by default, an
in-memory pair in tests). One reader task takes every frame off it, resolves the
matching request future, and hands notifications and server requests to subscribers
through unbounded queues, so a slow consumer never stalls the reader (codex drops
clients whose outbound queue fills: docs/protocol-notes.md, "Backpressure"). When the
transport closes, every waiter fails with ConnectionLostError and every subscriber
receives `None`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import itertools
import json
import logging
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from .. import __version__
from ..errors import (
    BridgeError,
    ConnectError,
    ConnectionLostError,
    RequestTimeoutError,
    RpcError,
    UsageError,
    internal,
)
from . import transport as tp
from .protocol.envelopes import (
    Envelope,
    Invalid,
    Notification,
    RequestId,
    Response,
    ServerRequest,
    error_response,
    notification,
    parse_frame,
    request,
    result_response,
)
from .protocol.generated import methods as m
from .protocol.generated.calls import Calls
from .protocol.generated.results import InitializeResponse

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from ..jsontypes import JsonObject, JsonValue

Event = Notification | ServerRequest
DEFAULT_REQUEST_TIMEOUT = 30.0


class Subscription:
    """A queue of notifications and server requests; `None` means the connection closed.

    Unbounded, and lighter than asyncio.Queue (a deque and one waiter): the reader
    puts every frame of a flood of deltas here, and `bench/bench_reader.py` holds it to
    0.9× a raw websockets loop."""

    def __init__(self, client: AppServerClient) -> None:
        self._client = client
        self._items: collections.deque[Event | None] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None

    def put(self, item: Event | None) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def qsize(self) -> int:
        return len(self._items)

    @property
    def refused(self) -> str | None:
        """Why the connection was closed on our side: a message over the frame cap."""
        return self._client.refused

    async def get(self) -> Event | None:
        while not self._items:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.popleft()

    def close(self) -> None:
        client = self._client
        client._subscribers = tuple(s for s in client._subscribers if s is not self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Rpc(Protocol):
    """What the talk service needs of a connection (AppServerClient, or a wrapper).
    `Calls(rpc)` (codex/protocol/generated/calls.py) sends its requests typed."""

    async def request(self, method: str, params: JsonObject | None = None, *,
                      timeout: float | None = None) -> JsonValue: ...

    async def respond(self, request_id: RequestId, result: JsonValue) -> None: ...

    async def respond_error(self, request_id: RequestId, code: int, message: str) -> None: ...

    def subscribe(self) -> Subscription: ...


class AppServerClient:
    """Connect, handshake, send requests, receive events.

    `url` is `ws://HOST:PORT` or `unix://PATH`; `token` is sent as a bearer token
    (codex's `--ws-auth capability-token`); `ca_file`/`ca_dir`, what a wss:// server is
    trusted by (default: SSL_CERT_FILE/SSL_CERT_DIR). `connector` opens the transport
    (default: a WebSocket; tests pass an in-memory one). `experimental` opts into codex's
    experimental API, which the server-side queue needs (docs/protocol-notes.md,
    "Server-side queue"); codexbridge always does.
    """

    def __init__(self, url: str, *, token: str | None = None,
                 client_name: str = "codexbridge",
                 request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
                 on_invalid: Callable[[Invalid], None] | None = None,
                 connector: tp.Connector | None = None,
                 experimental: bool = True, ca_file: str | None = None,
                 ca_dir: str | None = None) -> None:
        self.url = url
        self.token = token
        self.client_name = client_name
        self.request_timeout = request_timeout
        self.on_invalid = on_invalid or _report_invalid
        if connector is None and (ca_file or ca_dir):
            connector = functools.partial(tp.connect, ca_file=ca_file, ca_dir=ca_dir)
        self.connector: tp.Connector = connector or tp.connect
        self.experimental = experimental
        self.initialized = InitializeResponse()  # the server's answer to `initialize`
        self._ws: tp.Transport | None = None
        self._ids = itertools.count(1)
        self._waiters: dict[RequestId, asyncio.Future[JsonValue]] = {}
        # A tuple, replaced on (un)subscribe: the reader walks it once per frame, and a
        # flood of deltas should not copy a set for each one.
        self._subscribers: tuple[Subscription, ...] = ()
        self._reader: asyncio.Task[None] | None = None
        self._closed_reason: str | None = None
        self.refused: str | None = None  # set when we closed it: a message too big

    async def __aenter__(self) -> AppServerClient:
        await self.connect()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def connect(self) -> None:
        """Open the transport and complete initialize/initialized."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
        try:
            self._ws = await self.connector(self.url, headers)
        except ConnectError as exc:
            refused = auth_refused(self.url, self.token, exc)
            if refused is None:
                raise
            raise refused from None  # the message says it all (doctor shows a cause instead)
        self._reader = asyncio.create_task(self._read_loop(), name="codexbridge-reader")
        try:
            self.initialized = await Calls(self).initialize(
                client_info={"name": self.client_name, "title": "Codex Bridge",
                             "version": __version__},
                capabilities={"experimentalApi": self.experimental})
            await self.notify(m.INITIALIZED)
        except BaseException:
            # `async with` never reaches __aexit__ when __aenter__ fails: close here, or
            # the socket and the reader task outlive the error.
            await self.close()
            raise

    async def close(self) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await self._ws.close()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._reader, 2.0)
        self._fail_all("client closed")

    @property
    def server_info(self) -> JsonObject:
        """The `initialize` answer as it arrived (doctor and the MCP probe print it)."""
        return self.initialized.raw

    def subscribe(self) -> Subscription:
        sub = Subscription(self)
        if self._closed_reason is not None:
            sub.put(None)
        self._subscribers = (*self._subscribers, sub)
        return sub

    async def request(self, method: str, params: JsonObject | None = None, *,
                      timeout: float | None = None) -> JsonValue:
        """Send a request and wait for its result; raises RpcError on an error answer.
        (`Calls(client)` sends the requests codexbridge uses, typed.)"""
        if self._closed_reason is not None:
            raise ConnectionLostError(f"connection to {self.url} is closed "
                                      f"({self._closed_reason})")
        rid = next(self._ids)
        fut: asyncio.Future[JsonValue] = asyncio.get_running_loop().create_future()
        self._waiters[rid] = fut
        try:
            await self._send(request(rid, method, params))
            limit = self.request_timeout if timeout is None else timeout
            # asyncio.timeout, not wait_for: on 3.11 wait_for drops a cancel that lands
            # as the answer arrives, so an MCP caller's cancel waited out the whole turn.
            try:
                async with asyncio.timeout(limit):
                    return await fut
            except TimeoutError:
                raise RequestTimeoutError(
                    f"{method} got no answer from the app-server in {limit:g} s") from None
        finally:
            self._waiters.pop(rid, None)

    async def notify(self, method: str, params: JsonObject | None = None) -> None:
        await self._send(notification(method, params))

    async def respond(self, request_id: RequestId, result: JsonValue) -> None:
        await self._send(result_response(request_id, result))

    async def respond_error(self, request_id: RequestId, code: int, message: str) -> None:
        await self._send(error_response(request_id, code, message))

    async def _send(self, message: JsonObject) -> None:
        if self._ws is None:
            raise ConnectionLostError("not connected")
        try:
            await self._ws.send(json.dumps(message, ensure_ascii=False))
        except tp.TransportClosed as exc:
            raise ConnectionLostError(f"connection to {self.url} closed: {exc}") from exc

    async def _read_loop(self) -> None:
        assert self._ws is not None
        reason = "server closed the connection"
        bug: BridgeError | None = None
        try:
            recv, dispatch = self._ws.recv, self._dispatch  # (looked up once: per frame)
            while True:
                for env in parse_frame(await recv()):
                    dispatch(env)
        except tp.MessageTooBig as exc:
            reason = self.refused = str(exc)
            bug = UsageError(reason, details={"url": self.url})
        except tp.TransportClosed as exc:
            reason = str(exc) or reason
        except Exception as exc:  # a bug of ours, not a lost connection: said as one
            reason = f"reader failed: {exc!r}"
            bug = internal(exc, "reading the app-server's messages")
            bug.__cause__ = exc
        finally:
            self._fail_all(reason, bug)

    def _dispatch(self, env: Envelope) -> None:
        if isinstance(env, Response):
            fut = self._waiters.get(env.id)
            if fut is None or fut.done():
                return
            if env.error is not None:
                fut.set_exception(RpcError.from_wire(env.error))
            else:
                fut.set_result(env.result)
        elif isinstance(env, (Notification, ServerRequest)):
            for sub in self._subscribers:
                sub.put(env)
        else:
            self.on_invalid(env)

    def _fail_all(self, reason: str, bug: BridgeError | None = None) -> None:
        if self._closed_reason is None:
            self._closed_reason = reason
        for fut in self._waiters.values():
            if not fut.done():
                fut.set_exception(bug or ConnectionLostError(
                    f"connection to {self.url} lost while waiting: {reason}"))
        self._waiters.clear()
        for sub in self._subscribers:
            sub.put(None)


TOKEN_ENV = "CODEX_BRIDGE_TOKEN"


def auth_refused(url: str, token: str | None, exc: ConnectError) -> ConnectError | None:
    """The handshake answered 401 (codex's `--ws-auth capability-token`, serve's TLS
    relay): the server runs and refuses us — an authentication failure, not "is it
    running?". None for any other connect failure (a 403 may be an Origin check)."""
    response = getattr(exc.__cause__, "response", None)
    status = getattr(response, "status_code", None)
    if status != 401:
        return None
    if token is None:
        why = (f"the app-server at {url} wants a capability token (HTTP {status}) and none "
               f"was sent: set {TOKEN_ENV} to the token its server was started with")
    else:
        why = (f"the app-server at {url} refused the capability token (HTTP {status}): set "
               f"{TOKEN_ENV} to the token its server was started with (the one sent came "
               f"from {TOKEN_ENV}, or from the local serve's token file in bridge.json)")
    return ConnectError(f"authentication failed: {why}",
                        details={"url": url, "httpStatus": status, "variable": TOKEN_ENV,
                                 "token": "rejected" if token else "missing"},
                        retryable=False)


def _report_invalid(env: Invalid) -> None:
    _log.warning("ignored a malformed frame from the app-server (%s): %s", env.reason,
                 env.raw[:200])
