"""The real Codex TUI in tmux, attached to the app-server, watching the bridge talk."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from codexbridge.host.appserver import AppServerProcess as AppServer
from tests.support.cli import arun_cli, run_cli
from tests.support.raw_client import RawClient
from tests.support.tmux_tui import CodexTUI

pytestmark = [pytest.mark.real_codex, pytest.mark.tmux]


async def _wait_title_thread(url: str, timeout: float = 20.0) -> None:
    """The TUI opens its ephemeral title thread right after the first message."""
    async with RawClient(url) as c:
        deadline = asyncio.get_running_loop().time() + timeout
        while asyncio.get_running_loop().time() < deadline:
            ids = (await c.request("thread/loaded/list", {}))["data"]
            for tid in ids:
                t = (await c.request("thread/read", {"threadId": tid}))["thread"]
                if t.get("ephemeral"):
                    return
            await asyncio.sleep(0.1)
    raise AssertionError("no ephemeral title thread appeared")


async def test_bridge_message_and_reply_render_in_the_tui(
        app_server: AppServer, tui_factory: Callable[[], CodexTUI], workdir: Path) -> None:
    env = {"CODEX_BRIDGE_URL": app_server.url}
    tui = tui_factory()
    tui.wait_ready()
    # before the human's first message there is nothing to talk to yet: either no thread
    # (the TUI makes it ~0.2 s after its prompt shows) or one without a rollout
    early = run_cli("talk", "say", "too early", env=env)
    assert early.code == 3
    assert "open the Codex TUI" in early.err or "send one message in the Codex TUI" in early.err
    tui.send("hello from the human")
    tui.wait_for_text("MOCK REPLY: hello from the human", timeout=30)
    await _wait_title_thread(app_server.url)

    users = json.loads(run_cli("talk", "list", "--json", env=env).out)["threads"]
    assert len(users) == 1 and users[0]["threadSource"] == "user"
    assert users[0]["cwd"] == str(workdir)
    everything = json.loads(run_cli("talk", "list", "--all", "--json", env=env).out)["threads"]
    assert any(t["ephemeral"] for t in everything)
    assert len(everything) > len(users)

    res = await arun_cli("talk", "say", "message from claude via the bridge", env=env)
    assert res.code == 0, res.err
    assert res.out.strip() == "MOCK REPLY: message from claude via the bridge"
    screen = tui.wait_for_text("• MOCK REPLY: message from claude via the bridge", timeout=30)
    assert "› message from claude via the bridge" in screen


async def test_human_approves_in_the_tui(app_server: AppServer,
                                         tui_factory: Callable[[], CodexTUI],
                                         workdir: Path) -> None:
    env = {"CODEX_BRIDGE_URL": app_server.url}
    tui = tui_factory()
    tui.wait_ready()
    tui.send("hello")
    tui.wait_for_text("MOCK REPLY: hello", timeout=30)
    target = workdir / "approved-in-tui"
    say = asyncio.create_task(arun_cli("talk", "say", "--json", "-q",
                                       f"RUN: touch {target}", env=env))
    await asyncio.to_thread(tui.answer, "Would you like to run the following command?", "y",
                            30)
    res = await say
    assert res.code == 0, res.err
    data = json.loads(res.out)
    assert data["approvals"][0]["outcome"] == "answered in the TUI"
    assert target.exists()
