"""codex/threads.py when the app-server in use does not hold the thread: the TUI hint
fits the server (plain `codex` for codex's daemon), and codex's "already has an active
writer" becomes a NoThreadError (exit 3) saying another app-server holds the thread."""

from __future__ import annotations

import asyncio

import pytest

from codexbridge.codex.client import AppServerClient
from codexbridge.codex.threads import find_target, join
from codexbridge.errors import NoThreadError
from tests.support.memory_appserver import MemoryAppServer

DAEMON = "unix:///h/app-server-control/app-server-control.sock"


async def _find(url: str) -> None:
    async with AppServerClient(url, connector=MemoryAppServer(threads=[]).connector) as c:
        await find_target(c, None)


async def _join(tid: str, refusal: str) -> None:
    server = MemoryAppServer()
    server.refuse["thread/resume"] = refusal
    async with AppServerClient("ws://127.0.0.1:8787", connector=server.connector) as c:
        await join(c, tid)


def test_no_user_thread_on_the_daemon_says_plain_codex() -> None:
    with pytest.raises(NoThreadError) as info:
        asyncio.run(_find(DAEMON))
    assert ("is loaded in the app-server: open the Codex TUI with `codex -C DIR` (plain "
            "`codex` attaches to codex's own daemon by itself) and send it one message "
            "first") in info.value.message
    assert "--remote" not in info.value.message
    with pytest.raises(NoThreadError) as info:
        asyncio.run(_find("ws://127.0.0.1:8787"))
    assert "`codex --remote ws://127.0.0.1:8787 -C DIR`" in info.value.message


def test_an_active_writer_elsewhere_is_exit_3_not_1() -> None:
    tid = "01a23239-2603-7b62-8e22-80dd227a612d"
    with pytest.raises(NoThreadError) as info:
        asyncio.run(_join(tid, f"thread {tid} already has an active writer"))
    err = info.value
    assert err.exit_code == 3 and err.retryable is False
    assert err.message.startswith(f"thread {tid} is held by another app-server on this "
                                  "CODEX_HOME")
    assert "pass the --url of the one the TUI uses" in err.message
