"""`codexbridge mcp --role codex --http HOST:PORT`: the same MCP server over the SDK's
streamable HTTP transport, behind a bearer token.

For Codex on another machine than Claude: codex reaches this server through a `url`
entry in its config.toml (`bearer_token_env_var` names the variable holding the token,
measured on 0.169.0 — docs/fitting-in.md, "Two machines"), and the tools write into
*this* machine's mailboxes, where the Claude sessions' hooks read them.

The gate is a plain ASGI wrapper: every HTTP request must carry `Authorization: Bearer
<token>` (compared in constant time) or gets 401 with `WWW-Authenticate` — which codex
reports as "not logged in", and it then offers the model none of the tools. No token, no
server, at any address: loopback is not a boundary on a shared machine, and these tools
read and write every mailbox of this user (host/tokens.py: the token's floor, and a
--token-file other users may read is refused). The SDK's own auth path expects OAuth
settings; a fixed shared token is what `bearer_token_env_var` sends.
"""

from __future__ import annotations

import hmac
import os
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, NamedTuple

from ..errors import UsageError
from ..host.tokens import MAKE_HINT, check_strength, read_token_file

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

TOKEN_ENV = "CODEX_BRIDGE_MCP_TOKEN"
PATH = "/mcp"

# ASGI's own shapes (what starlette and uvicorn pass); the gate reads two keys of a scope
# and passes every message through untouched.
Scope = MutableMapping[str, object]
Receive = Callable[[], Awaitable[MutableMapping[str, object]]]
Send = Callable[[MutableMapping[str, object]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class Listen(NamedTuple):
    host: str
    port: int

    @property
    def url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host


def parse_listen(raw: str) -> Listen:
    """`HOST:PORT`, `[v6]:PORT`, or `:PORT` (loopback); port 0 picks a free one."""
    host, sep, port_text = raw.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        raise UsageError(f"--http {raw!r}: expected HOST:PORT (e.g. 127.0.0.1:8790)")
    host = host.strip("[]") or "127.0.0.1"
    return Listen(host, int(port_text))


def load_token(token_file: str | None, environ: MutableMapping[str, str] | None = None
               ) -> str | None:
    """The bearer token: `--token-file` (a file of this user's alone), else
    CODEX_BRIDGE_MCP_TOKEN; None when neither gives one."""
    env = os.environ if environ is None else environ
    if token_file:
        return read_token_file(token_file, "--token-file")
    return env.get(TOKEN_ENV) or None


def check_exposure(listen: Listen, token: str | None) -> str:
    """The token to serve behind — or a UsageError: none at all (at any address: another
    local user reaches loopback too), or one too weak to keep anyone out."""
    if token is None:
        raise UsageError(f"refusing to serve MCP on {listen.host}:{listen.port} without a "
                         "bearer token: any user of this machine could read and write your "
                         "Claude sessions' mail through it (loopback is no boundary). Run "
                         f"`export {TOKEN_ENV}=$({MAKE_HINT})` first (or pass --token-file "
                         "FILE, a file of yours alone), and give codex the same token",
                         details={"variable": TOKEN_ENV})
    check_strength(token, "the MCP token")
    return token


def bearer_gate(app: App, token: str) -> App:
    """`app` behind `Authorization: Bearer <token>`."""
    wanted = f"Bearer {token}".encode()

    async def gate(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":  # lifespan: the SDK's session manager runs there
            await app(scope, receive, send)
            return
        given = b""
        headers = scope.get("headers")
        for key, value in headers if isinstance(headers, list) else []:
            if key.lower() == b"authorization":
                given = value
        if hmac.compare_digest(given, wanted):
            await app(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"),
                                (b"www-authenticate", b'Bearer realm="codexbridge"')]})
        await send({"type": "http.response.body",
                    "body": b'{"error":"a valid bearer token is required"}'})

    return gate


def bind(listen: Listen) -> socket.socket:
    family = socket.AF_INET6 if ":" in listen.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((listen.host, listen.port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {listen.host}:{listen.port}: "
                         f"{exc.strerror or exc}") from exc
    sock.listen(128)
    return sock


def url_of(listen: Listen, sock: socket.socket) -> str:
    """The URL a bound socket serves MCP at (port 0 becomes the port picked)."""
    return f"http://{listen.url_host}:{sock.getsockname()[1]}{PATH}"


def serve_http(server: MCPServer, sock: socket.socket, listen: Listen, token: str) -> None:
    """Run `server` on `sock` (from `bind`) until SIGINT/SIGTERM."""
    # lazy: only `mcp --http` pays for uvicorn; the stdio start goes through this module
    import anyio
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=PATH, host=listen.host)
    config = uvicorn.Config(bearer_gate(app, token), log_level="warning", lifespan="on")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))
