"""The client over `unix://PATH` against the real app-server's unix listener."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from codexbridge.codex.client import AppServerClient
from codexbridge.codex.threads import find_target
from codexbridge.codex.turn import say

pytestmark = pytest.mark.real_codex


async def test_say_over_a_unix_socket(codex_bin: str, codex_env: dict[str, str],
                                      workdir: Path, tmp_path: Path) -> None:
    sock = tmp_path / "app.sock"
    proc = subprocess.Popen([codex_bin, "app-server", "--listen", f"unix://{sock}"],
                            cwd=workdir, env=codex_env, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while not sock.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        url = f"unix://{sock}"
        # the test peer only speaks ws://; the bridge's own client sets the thread up
        async with AppServerClient(url, client_name="peer") as peer:
            started = await peer.request("thread/start", {"cwd": str(workdir),
                                                          "threadSource": "user"})
            tid = started["thread"]["id"]
            first = await say(peer, tid, "first", join_first=False, timeout=30)
            assert first.status == "completed"
        async with AppServerClient(url) as client:
            target = await find_target(client, None)
            assert target.id == tid
            result = await say(client, tid, "over unix", timeout=30)
        assert result.status == "completed"
        assert result.reply == "MOCK REPLY: over unix"
    finally:
        proc.terminate()
        proc.wait(10)
