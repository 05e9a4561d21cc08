"""What every tool of one server process shares: settings, the artifact store, and
how to reach the app-server and the mailboxes.

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
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from .results import warning
from .settings import Settings

if TYPE_CHECKING:
    from ..talk.client import AppServerClient
    from ..talk.endpoint import Endpoint
    from .artifacts import ArtifactStore

Connector = Callable[[], "AbstractAsyncContextManager[AppServerClient]"]
CLIENT_NAME = "codexbridge-mcp"
PREVIEW_CHARS = 2000


@asynccontextmanager
async def connect_from_endpoint() -> AsyncIterator[AppServerClient]:
    """A connected, initialized client for the endpoint in force right now."""
    from ..talk.client import AppServerClient

    ep = resolve_endpoint()
    async with AppServerClient(ep.url, token=ep.token, client_name=CLIENT_NAME) as client:
        yield client


def resolve_endpoint() -> Endpoint:
    """`talk.endpoint.resolve_endpoint()`, imported on the first call."""
    from ..talk.endpoint import resolve_endpoint as resolve

    return resolve()


def inbox_dir() -> str:
    """`inbox.location.inbox_dir()`, imported on the first call."""
    from ..inbox.location import inbox_dir as where

    return where()


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

    @staticmethod
    def create(settings: Settings, **overrides: Any) -> Runtime:
        return Runtime(settings=settings, **overrides)

    @property
    def store(self) -> ArtifactStore:
        if self._store is None:
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

    def deliver(self, text: str, *, kind: str, meta: dict[str, Any],
                total_bytes: int = 0) -> tuple[dict[str, Any], list[dict[str, str]]]:
        """Inline text, or (over CODEX_BRIDGE_INLINE_MAX) an artifact id with a preview.

        Returns the data fields `{text, bytes, artifact, truncated, preview?}` and any
        warnings. Beyond CODEX_BRIDGE_CAPTURE_MAX the text is cut (at a character
        boundary) and `truncated` is true. If the store cannot take it, the first
        CODEX_BRIDGE_INLINE_MAX bytes come back inline with a warning: the turn already
        ran, so its output is never turned into an error.
        """
        s = self.settings
        data = text.encode("utf-8")
        # `text` may already be cut to the capture limit by the turn tracker.
        total = max(len(data), total_bytes)
        warnings: list[dict[str, str]] = []
        if total <= s.inline_max:
            return {"text": text, "bytes": total, "artifact": None, "truncated": False}, []
        truncated = total > s.capture_max
        if truncated:
            text = _cut(data, s.capture_max)
            warnings.append(warning("OUTPUT_TRUNCATED", (
                f"the output is {total} bytes; only the first {len(text.encode('utf-8'))} "
                "(CODEX_BRIDGE_CAPTURE_MAX) were kept")))
        from .artifacts import StoreFull

        try:
            art = self.store.create(text, kind=kind, meta=meta)
        except (StoreFull, OSError) as exc:
            warnings.append(warning("ARTIFACT_STORE_UNAVAILABLE", (
                f"the output ({total} bytes) could not be stored ({exc}); returning the "
                f"first {s.inline_max} bytes inline")))
            return {"text": _cut(data, s.inline_max), "bytes": total, "artifact": None,
                    "truncated": True}, warnings
        return {"text": None, "bytes": total, "artifact": art.public(), "truncated": truncated,
                "preview": text[:PREVIEW_CHARS]}, warnings


def _cut(data: bytes, limit: int) -> str:
    from .artifacts import utf8_cut

    return data[: utf8_cut(data, limit)].decode("utf-8")
