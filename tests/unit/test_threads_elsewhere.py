"""talk/threads.py when the app-server in use does not hold the thread: the TUI hint
fits the server (plain `codex` for codex's daemon), and codex's "already has an active
writer" becomes a NoThreadError (exit 3) saying another app-server holds the thread."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from codexbridge.errors import NoThreadError, RpcError
from codexbridge.talk.threads import find_target, join

DAEMON = "unix:///h/app-server-control/app-server-control.sock"


class FakeRpc:
    """Answers thread/loaded/list with nothing; thread/resume with `resume_error`."""

    def __init__(self, url: str, resume_error: dict[str, Any] | None = None) -> None:
        self.url = url
        self.resume_error = resume_error

    async def request(self, method: str, params: dict[str, Any] | None = None, *,
                      timeout: float | None = None) -> Any:
        if method == "thread/resume" and self.resume_error:
            raise RpcError.from_wire(self.resume_error)
        return {"data": [], "nextCursor": None}


def test_no_user_thread_on_the_daemon_says_plain_codex() -> None:
    with pytest.raises(NoThreadError) as info:
        asyncio.run(find_target(FakeRpc(DAEMON), None))  # type: ignore[arg-type]
    assert ("is loaded in the app-server: open the Codex TUI with `codex -C DIR` (plain "
            "`codex` attaches to codex's own daemon by itself) and send it one message "
            "first") in info.value.message
    assert "--remote" not in info.value.message
    with pytest.raises(NoThreadError) as info:
        asyncio.run(find_target(FakeRpc("ws://127.0.0.1:8787"), None))  # type: ignore[arg-type]
    assert "`codex --remote ws://127.0.0.1:8787 -C DIR`" in info.value.message


def test_an_active_writer_elsewhere_is_exit_3_not_1() -> None:
    tid = "01a23239-2603-7b62-8e22-80dd227a612d"
    rpc = FakeRpc("ws://127.0.0.1:8787", {"code": -32600,
                                          "message": f"thread {tid} already has an active "
                                                     "writer"})
    with pytest.raises(NoThreadError) as info:
        asyncio.run(join(rpc, tid))  # type: ignore[arg-type]
    err = info.value
    assert err.exit_code == 3 and err.retryable is False
    assert err.message.startswith(f"thread {tid} is held by another app-server on this "
                                  "CODEX_HOME")
    assert "pass the --url of the one the TUI uses" in err.message
