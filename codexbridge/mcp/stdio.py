"""Serving one MCP session on stdin/stdout: what a cold `codexbridge mcp` runs, and what
a quick start hands its session to (`startup_cache.py`).

Claude Code stops its MCP servers with SIGINT and SIGTERM 100 ms later: both end the
process at once, quietly — nothing to flush (every tool call is answered or abandoned by
the client going away; a turn already started keeps running in Codex).
"""

from __future__ import annotations

import gc
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import IO, TYPE_CHECKING

from ..errors import UsageError

if TYPE_CHECKING:
    from .settings import Settings


def exit_now(signum: int, _frame: FrameType | None) -> None:
    # os._exit: no atexit, no thread joins, no tracebacks from tasks torn down mid-await.
    os._exit(0 if signum in (signal.SIGINT, signal.SIGTERM) else 128 + signum)


@contextmanager
def quiet_gc() -> Iterator[None]:
    """No cyclic GC while the SDK is imported and the server built.

    That import defines thousands of pydantic models — some 80 000 tracked objects,
    kept for the life of the process. The ~200 collections it triggers free under a
    thousand objects between them (mcp 2.3), yet cost 10-15 % of the start-up.
    Afterwards `gc.freeze()` moves what was built to the permanent generation, so no
    later collection (during a tool call) walks it either.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def serve_stdio(config: Settings, *, streams: tuple[IO[str], IO[str]] | None = None) -> None:
    """Serve the server built for `config` on stdin/stdout, or on `streams` (what the
    quick start hands over), until EOF or a signal."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, exit_now)
    with quiet_gc():
        try:
            # lazy: the SDK's import, with the collector paused; the quick start runs first
            from .server import build_server, serve_streams
        except ImportError as exc:  # pragma: no cover - a broken install
            raise UsageError(f"the mcp SDK is not importable ({exc}); reinstall "
                             "codexbridge") from exc
        server = build_server(config)
    if streams is None:
        server.run("stdio")
        return
    serve_streams(server, streams)
