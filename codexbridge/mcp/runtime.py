"""What every tool of one server process shares: settings, the artifact store, the
per-thread queue, and how to reach the app-server and the mailboxes.

The app-server is reached through `connect()`, a fresh connection per tool call: the
bridge's `serve` may restart between two calls (and bridge.json with it), and a call
never inherits a broken socket. Tests inject their own `connect`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from ..host.paths import state_dir
from ..inbox.location import inbox_dir
from ..talk.client import AppServerClient
from ..talk.endpoint import Endpoint, resolve_endpoint
from .artifacts import ArtifactStore, StoreFull
from .results import warning
from .settings import Settings
from .turn_queue import TurnQueue

Connector = Callable[[], AbstractAsyncContextManager[AppServerClient]]
CLIENT_NAME = "codexbridge-mcp"
PREVIEW_CHARS = 2000


@asynccontextmanager
async def connect_from_endpoint() -> AsyncIterator[AppServerClient]:
    """A connected, initialized client for the endpoint in force right now."""
    ep = resolve_endpoint()
    async with AppServerClient(ep.url, token=ep.token, client_name=CLIENT_NAME) as client:
        yield client


@dataclass
class Runtime:
    settings: Settings
    store: ArtifactStore
    queue: TurnQueue = field(default_factory=TurnQueue)
    connect: Connector = connect_from_endpoint
    endpoint: Callable[[], Endpoint] = resolve_endpoint
    inbox: Callable[[], str] = inbox_dir
    background: set[asyncio.Task[Any]] = field(default_factory=set)

    @staticmethod
    def create(settings: Settings, **overrides: Any) -> Runtime:
        store = ArtifactStore(state_dir() / "artifacts", settings.role,
                              ttl=settings.artifact_ttl, max_bytes=settings.artifact_store_max)
        return Runtime(settings=settings, store=store, **overrides)

    def check_text(self, text: str) -> None:
        """A message to send: not empty, not over CODEX_BRIDGE_TEXT_MAX characters."""
        if not text.strip():
            raise UsageError("text is empty", details={"parameter": "text"})
        if len(text) > self.settings.text_max:
            raise UsageError(f"text is {len(text)} characters; the limit is "
                             f"{self.settings.text_max} (CODEX_BRIDGE_TEXT_MAX)",
                             details={"parameter": "text"})

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """A task that outlives the tool call (kept referenced until it ends)."""
        task = asyncio.create_task(coro, name=name)
        self.background.add(task)
        task.add_done_callback(self.background.discard)
        return task

    async def drain(self, timeout: float) -> None:
        """Wait for background tasks (tests); cancel what is left after `timeout`."""
        if not self.background:
            return
        _done, pending = await asyncio.wait(set(self.background), timeout=timeout)
        for task in pending:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

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
