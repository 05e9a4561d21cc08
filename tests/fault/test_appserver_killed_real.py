"""The real codex app-server killed mid-turn (SIGKILL), then started again on the same
address: what `talk say` and `talk send` tell the user, and what the record says."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import pytest

from codexbridge.host.appserver import AppServerProcess, launch
from codexbridge.inbox.location import inbox_dir
from codexbridge.inbox.peek import peek
from codexbridge.mock.responses import MockResponsesServer
from tests.support.cli import arun_cli
from tests.support.raw_client import RawClient, start_user_thread

pytestmark = pytest.mark.real_codex


async def held(mock: MockResponsesServer, key: str) -> None:
    await asyncio.to_thread(mock.wait_held, key, 60.0)


def kill(server: AppServerProcess) -> None:
    assert server.proc is not None
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(10)


async def test_say_and_send_when_the_app_server_dies_mid_turn(
        codex_bin: str, workdir: Path, codex_env: dict[str, str], tmp_path: Path,
        mock_model: MockResponsesServer) -> None:
    server = launch(codex_bin, workdir, codex_env, stderr_path=tmp_path / "a.stderr")
    port = server.port
    env = {"CODEX_BRIDGE_URL": server.url}
    try:
        async with RawClient(server.url) as peer:
            human = await start_user_thread(peer, workdir, "first")
        # 1) talk say: a clear message and the documented exit code, no traceback
        say = asyncio.create_task(arun_cli("talk", "say", "HOLD:dead1 long job", env=env))
        await held(mock_model, "dead1")
        kill(server)
        said = await say
        assert said.code == 5, said.err  # CODEX_CONNECTION_LOST → "cannot connect" family
        assert "lost" in said.err and "Traceback" not in said.err
        # 2) talk send: the receipt came first; the courier's record says what happened
        server = launch(codex_bin, workdir, codex_env, port=port,
                        stderr_path=tmp_path / "b.stderr")
        async with RawClient(server.url) as peer:
            await peer.request("thread/resume", {"threadId": human.thread_id,
                                                 "excludeTurns": True})
        sent = await arun_cli("talk", "send", "--json", "--thread", human.thread_id,
                              "--reply-to", "asker", "HOLD:dead2 another job", env=env)
        assert sent.code == 0, sent.err
        rid = json.loads(sent.out)["delivery_id"]
        await held(mock_model, "dead2")
        kill(server)
        # the courier lost its connection and waits for the server; the local record
        # still shows, with no server to ask
        down = await arun_cli("talk", "status", rid, "--json", env=env)
        assert down.code == 0, down.err
        assert json.loads(down.out)["delivery"]["state"] not in ("delivered", "failed")
        # 3) codex comes back on the same address: the courier rejoins by itself and the
        # thread tells what became of the turn; the asker is told without any command
        server = launch(codex_bin, workdir, codex_env, port=port,
                        stderr_path=tmp_path / "c.stderr")
        after = await arun_cli("talk", "status", rid, "--json", "--wait", "60", env=env)
        assert after.code == 0, after.err
        record: dict[str, Any] = json.loads(after.out)["delivery"]
        print("after restart:", record["state"], record["reason"])
        assert record["state"] in ("failed", "delivered"), record
        if record["state"] == "failed":
            assert "interrupted" in (record["reason"] or ""), record
            assert "went away" in record["reason"], record
            told = [m.text for m in peek(inbox_dir(), "asker").mails]
            assert len(told) == 1 and told[0].startswith(f"DELIVERY FAILED: your request {rid}")
        mock_model.release("dead1")
        mock_model.release("dead2")
    finally:
        server.stop()
