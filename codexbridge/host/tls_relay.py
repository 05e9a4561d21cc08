"""A TLS front for the app-server: `wss://HOST:PORT` in, the app-server's loopback
`ws://127.0.0.1:<port>` out, frames copied both ways.

codex 0.169.0 has no TLS listener (`--listen` takes stdio://, unix://, ws://IP:PORT, off;
`wss://` is refused), but its TUI connects to `--remote wss://…` and verifies the
certificate against `SSL_CERT_FILE` (`CODEX_CA_CERTIFICATE` is not honoured there) —
measured, docs/fitting-in.md, "wss://". So `serve --tls-cert/--tls-key` runs codex on
loopback and this relay in front. It checks the capability token itself (a wrong one
gets HTTP 401 before anything reaches codex) and passes `Authorization` on, so codex's
own `--ws-auth capability-token` check still applies.

It runs its own event loop in a daemon thread: `serve` stays a plain supervisor.
"""

from __future__ import annotations

import asyncio
import hmac
import ssl
import threading
from http import HTTPStatus
from typing import TYPE_CHECKING

from websockets.asyncio.client import connect
from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed

from ..errors import ServeError, UsageError

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection
    from websockets.asyncio.server import ServerConnection
    from websockets.http11 import Request, Response

FORWARDED = ("authorization",)


def server_context(cert: str, key: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(f"cannot load the TLS certificate {cert} / key {key}: {exc}") from exc
    return ctx


def token_ok(header: str | None, token: str) -> bool:
    return header is not None and hmac.compare_digest(header.encode(),
                                                      f"Bearer {token}".encode())


class TlsRelay:
    def __init__(self, host: str, port: int, upstream: str, context: ssl.SSLContext,
                 token: str) -> None:
        self.host, self.port, self.upstream = host, port, upstream
        self.context, self.token = context, token
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    def start(self, timeout: float = 10.0) -> None:
        self._thread = threading.Thread(target=self._run, name="tls-relay", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise ServeError(f"the TLS relay on {self.host}:{self.port} did not start")
        if self._error is not None:
            raise ServeError(f"the TLS relay cannot listen on {self.host}:{self.port}: "
                             f"{self._error}") from self._error

    def stop(self) -> None:
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(5)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported by start(), never a thread traceback
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with serve(self._handle, self.host, self.port, ssl=self.context,
                         process_request=self._check, compression=None, max_size=None,
                         ping_interval=None):
            self._ready.set()
            await self._stop.wait()

    def _check(self, connection: ServerConnection, request: Request) -> Response | None:
        if token_ok(request.headers.get("Authorization"), self.token):
            return None
        return connection.respond(HTTPStatus.UNAUTHORIZED, "a valid capability token is "
                                                           "required\n")

    async def _handle(self, downstream: ServerConnection) -> None:
        request = downstream.request  # (always there once the handshake is done)
        headers = {k: v for k, v in (request.headers.raw_items() if request else ())
                   if k.lower() in FORWARDED}
        try:
            upstream = await connect(self.upstream, additional_headers=headers,
                                     compression=None, max_size=None, ping_interval=None)
        except Exception:  # refused, 401, a bad handshake: the client hears why
            await downstream.close(1011, "the app-server behind the relay is not reachable")
            return

        async def pump(src: ServerConnection | ClientConnection,
                       dst: ServerConnection | ClientConnection) -> None:
            try:
                async for frame in src:
                    await dst.send(frame)
            except ConnectionClosed:
                pass

        async with upstream:
            tasks = [asyncio.create_task(pump(downstream, upstream)),
                     asyncio.create_task(pump(upstream, downstream))]
            _done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
            await downstream.close()
