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
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox.peek import peek
from tests.support.cli import arun_cli
from tests.support.mock_codex import MockResponsesServer
from tests.support.raw_client import RawClient, start_user_thread

pytestmark = pytest.mark.real_codex


async def held(mock: MockResponsesServer, key: str) -> None:
    await asyncio.to_thread(mock.wait_held, key, 60.0)


async def courier_noted(rid: str, env: dict[str, str], field: str) -> None:
    """The courier has written `field` into the record it carries (`server_lost_at`: it
    lost the app-server; `turn_id`: it follows the turn)."""
    for _ in range(300):
        got = await arun_cli("talk", "status", rid, "--json", env=env)
        if json.loads(got.out)["delivery"].get(field) is not None:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the courier never noted {field}: {got.out}")


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
        await courier_noted(rid, env, "server_lost_at")
        text = await arun_cli("talk", "status", rid, env=env)
        assert text.code == 0 and "the app-server is down" in text.out, text
        table = await arun_cli("talk", "status", env=env)
        assert "(app-server down: the courier waits for it)" in table.out, table
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


async def test_the_server_never_comes_back_the_asker_is_told_what_to_run(
        codex_bin: str, workdir: Path, codex_env: dict[str, str], tmp_path: Path,
        mock_model: MockResponsesServer) -> None:
    """The courier waits CODEX_BRIDGE_SERVER_WAIT (60 s by default; 2 s here, the bound
    under test) for a dead app-server; while it waits, `talk status` shows the local
    record and says the server is down; when the wait ends, the record fails and the
    asker gets DELIVERY FAILED naming the request, what happened and what to run."""
    server = launch(codex_bin, workdir, codex_env, stderr_path=tmp_path / "a.stderr")
    env = {"CODEX_BRIDGE_URL": server.url, "CODEX_BRIDGE_SERVER_WAIT": "2"}
    try:
        async with RawClient(server.url) as peer:
            human = await start_user_thread(peer, workdir, "first")
        sent = await arun_cli("talk", "send", "--json", "--thread", human.thread_id,
                              "--reply-to", "asker", "HOLD:gone1 a job", env=env)
        assert sent.code == 0, sent.err
        rid = json.loads(sent.out)["delivery_id"]
        await held(mock_model, "gone1")
        await courier_noted(rid, env, "turn_id")  # (else an earlier stage is named)
        kill(server)
        after = await arun_cli("talk", "status", rid, "--json", "--wait", "60", env=env)
        assert after.code == 0, after.err
        record: dict[str, Any] = json.loads(after.out)["delivery"]
        assert record["state"] == "failed", record
        assert "did not come back within 2 s" in record["reason"], record
        assert "while Codex was answering" in record["reason"], record
        told = [m.text for m in peek(inbox_dir(), "asker").mails]
        assert len(told) == 1 and told[0].startswith(f"DELIVERY FAILED: your request {rid}")
        assert "did not come back" in told[0] and "codex -C" in told[0]
        assert f"codexbridge talk read --thread {human.thread_id}" in told[0]
        # with no server at all, `talk status` still reads the record, offline
        text = await arun_cli("talk", "status", rid, env=env)
        assert text.code == 0 and f"delivery {rid} (to-codex): failed" in text.out, text
    finally:
        mock_model.release("gone1")
        server.stop()
