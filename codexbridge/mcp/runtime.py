"""What a tool body gets: the settings in force, the artifact store, how to reach the
app-server and the mailboxes, and which Codex thread made the call.

The app-server is reached through `connect()`, a fresh connection per tool call: the
bridge's `serve` may restart between two calls (and bridge.json with it), and a call
never inherits a broken socket. Tests inject their own `connect`.

Nothing here is imported or built before a tool needs it: the app-server client (and
websockets under it), the endpoint and mailbox lookups, the artifact store (and its
directory) and the queue come on first use, so start-up pays for none of them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import UsageError
from .results import Warnings, warning
from .settings import Settings

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context

    from ..codex.client import AppServerClient  # lazy: the cold MCP start imports no websockets
    from ..codex.endpoint import Endpoint
    from .artifacts import ArtifactStore, PublicArtifact

Connector = Callable[[], "AbstractAsyncContextManager[AppServerClient]"]
CLIENT_NAME = "codexbridge-mcp"
PREVIEW_CHARS = 2000


@asynccontextmanager
async def connect_from_endpoint() -> AsyncIterator[AppServerClient]:
    """A connected, initialized client for the endpoint in force right now."""
    from ..codex.client import AppServerClient  # lazy: the cold MCP start imports no websockets

    ep = resolve_endpoint()
    async with AppServerClient(ep.url, token=ep.token, client_name=CLIENT_NAME) as client:
        yield client


def resolve_endpoint() -> Endpoint:
    """`codex.endpoint.resolve_endpoint()`, imported on the first call."""
    from ..codex.endpoint import resolve_endpoint as resolve  # lazy: the cold MCP start

    return resolve()


def inbox_dir() -> str:
    """`host.mailboxes.inbox_dir()`, imported on the first call."""
    from ..host.mailboxes import inbox_dir as where  # lazy: the cold MCP start

    return where()


@dataclass(frozen=True)
class Delivered:
    """A tool's large text as the result carries it: inline (`text`), or stored as an
    artifact (`text` None, `artifact` its public fields, `preview` its beginning)."""
    text: str | None
    bytes: int
    artifact: PublicArtifact | None
    truncated: bool
    preview: str | None = None


class Runtime:
    """`store` may be given (tests) or is made on first use: the store's
    directory (`<state dir>/artifacts`) is created only when a tool first needs it."""

    def __init__(self, settings: Settings, store: ArtifactStore | None = None,
                 connect: Connector = connect_from_endpoint,
                 endpoint: Callable[[], Endpoint] = resolve_endpoint,
                 inbox: Callable[[], str] = inbox_dir) -> None:
        self.settings = settings
        self._store = store
        self.connect = connect
        self.endpoint = endpoint
        self.inbox = inbox

    @property
    def store(self) -> ArtifactStore:
        if self._store is None:
            # lazy: the cold MCP start makes no store (nor imports its module)
            from ..host.paths import state_dir
            from .artifacts import ArtifactStore

            s = self.settings
            self._store = ArtifactStore(state_dir() / "artifacts", s.role, ttl=s.artifact_ttl,
                                        max_bytes=s.artifact_store_max)
        return self._store

    def check_text(self, text: str) -> None:
        """A message to send: not empty, not over CODEX_BRIDGE_TEXT_MAX characters."""
        if not text.strip():
            raise UsageError("text is empty", details={"parameter": "text"})
        if len(text) > self.settings.text_max:
            raise UsageError(f"text is {len(text)} characters; the limit is "
                             f"{self.settings.text_max} (CODEX_BRIDGE_TEXT_MAX)",
                             details={"parameter": "text"})

    def deliver(self, text: str, *, kind: str, meta: dict[str, object],
                total_bytes: int = 0) -> tuple[Delivered, Warnings]:
        """Inline text, or (over CODEX_BRIDGE_INLINE_MAX) an artifact id with a preview.

        Returns what the result carries and any warnings. Beyond CODEX_BRIDGE_CAPTURE_MAX
        the text is cut (at a character boundary) and `truncated` is true. If the store
        cannot take it, the first CODEX_BRIDGE_INLINE_MAX bytes come back inline with a
        warning: the turn already ran, so its output is never turned into an error.
        """
        s = self.settings
        data = text.encode("utf-8")
        # `text` may already be cut to the capture limit by the turn tracker.
        total = max(len(data), total_bytes)
        warnings: Warnings = []
        if total <= s.inline_max:
            return Delivered(text, total, None, truncated=False), []
        truncated = total > s.capture_max
        if truncated:
            text = _cut(data, s.capture_max)
            warnings.append(warning("OUTPUT_TRUNCATED", (
                f"the output is {total} bytes; only the first {len(text.encode('utf-8'))} "
                "(CODEX_BRIDGE_CAPTURE_MAX) were kept")))
        from .artifacts import StoreFull  # lazy: the cold MCP start

        try:
            art = self.store.create(text, kind=kind, meta=meta)
        except (StoreFull, OSError) as exc:
            warnings.append(warning("ARTIFACT_STORE_UNAVAILABLE", (
                f"the output ({total} bytes) could not be stored ({exc}); returning the "
                f"first {s.inline_max} bytes inline")))
            return Delivered(_cut(data, s.inline_max), total, None, truncated=True), warnings
        return Delivered(None, total, art.public(), truncated,
                         preview=text[:PREVIEW_CHARS]), warnings


def _cut(data: bytes, limit: int) -> str:
    from .artifacts import utf8_cut  # lazy: the cold MCP start

    return data[: utf8_cut(data, limit)].decode("utf-8")


def calling_thread(ctx: Context | None) -> str | None:
    """The Codex thread whose model made this tool call.

    Codex gives its MCP servers no CODEX_THREAD_ID (their environment is HOME, LANG,
    PATH, TERM only); the thread id travels in each call's `_meta` instead, as
    `threadId` and in `x-codex-turn-metadata` (docs/protocol-notes.md, measured).
    """
    try:
        meta = ctx.request_context.meta if ctx is not None else None
    except ValueError:  # not inside a request
        return None
    if not meta:
        return None
    tid = meta.get("threadId")
    if not isinstance(tid, str):
        turn = meta.get("x-codex-turn-metadata")
        tid = turn.get("thread_id") if isinstance(turn, dict) else None
    return tid if isinstance(tid, str) and tid else None
