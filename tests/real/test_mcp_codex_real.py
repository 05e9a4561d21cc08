"""`codexbridge mcp --role claude` against the real codex 0.169.0 app-server (mock model).

The MCP server runs as a real stdio child (as Claude Code would start it); a RawClient
stands in for the TUI and owns the user thread.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from codexbridge.host.appserver import AppServerProcess as AppServer
from tests.support.binaries import codex_version
from tests.support.mock_codex import MockResponsesServer, big_text
from tests.support.raw_client import RawClient, start_user_thread

pytestmark = pytest.mark.real_codex


def server_params(app_server: AppServer, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "codexbridge", "mcp", "--role", "claude"],
        env={**os.environ, "CODEX_BRIDGE_URL": app_server.url, **env})


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    sc = result.structured_content
    assert isinstance(sc, dict) and sc["ok"] is (not result.is_error), result.content
    return sc


async def test_send_returns_the_reply_and_the_tui_sees_the_turn(app_server: AppServer,
                                                                workdir: Path) -> None:
    async with RawClient(app_server.url) as tui:
        user = await start_user_thread(tui, workdir, "first message from the human")
        since = tui.mark()
        async with Client(server_params(app_server), mode="legacy") as client:
            listed = await call(client, "codex_threads_list", {})
            assert [t["id"] for t in listed["data"]["threads"]] == [user.thread_id]
            sc = await call(client, "codex_message_send", {"text": "hello over MCP"})
            assert sc["data"]["reply"] == "MOCK REPLY: hello over MCP"
            assert sc["data"]["threadId"] == user.thread_id and sc["data"]["turnId"]
            history = await call(client, "codex_thread_read", {"threadId": user.thread_id})
            last = history["data"]["turns"][-1]["text"]
            # the message went with its envelope (a peer agent, hop 1/40); the mock
            # answers the words under it
            assert re.match(r"› \[codexbridge [a-z0-9]{6}\] from Claude Code — a peer AI "
                            "agent", last)
            assert "\n  hello over MCP\n  \n  [codexbridge " in last
            assert last.endswith("end of the message from Claude Code\n"
                                 "• MOCK REPLY: hello over MCP"), last
            status = await call(client, "bridge_status", {})
            assert status["data"]["appServer"]["reachable"] is True
            assert status["data"]["versions"]["codex"] == codex_version()
        done = await tui.wait_method("turn/completed", since=since)
        assert done["params"]["threadId"] == user.thread_id


async def test_a_reply_of_400k_is_an_artifact_that_pages_back_byte_exact(
        app_server: AppServer, workdir: Path) -> None:
    async with RawClient(app_server.url) as tui:
        await start_user_thread(tui, workdir, "first")
        async with Client(server_params(app_server), mode="legacy") as client:
            sc = await call(client, "codex_message_send", {"text": "BIG:400000"})
            data = sc["data"]
            assert data["reply"] is None and data["replyBytes"] == 400000
            art = data["artifact"]
            assert art["totalBytes"] == 400000
            chunks: list[str] = []
            cursor: str | None = None
            while True:
                args: dict[str, Any] = {"artifactId": art["artifactId"], "maxBytes": 65536}
                if cursor is not None:
                    args["cursor"] = cursor
                page = (await call(client, "bridge_output_read", args))["data"]
                assert page["offset"] == sum(len(c.encode()) for c in chunks)
                chunks.append(page["text"])
                cursor = page["nextCursor"]
                if cursor is None:
                    break
    assert "".join(chunks).encode() == big_text(400000).encode()
    assert len(chunks) == 7  # ceil(400000 / 65536)


async def test_concurrent_sends_become_turns_in_call_order(
        app_server: AppServer, workdir: Path, mock_model: MockResponsesServer) -> None:
    async with RawClient(app_server.url, capabilities={"experimentalApi": True}) as tui:
        user = await start_user_thread(tui, workdir, "first")
        texts = ("HOLD:calls one", "two", "three")
        async with Client(server_params(app_server), mode="legacy") as client:
            tasks = []
            for n, text in enumerate(texts):
                tasks.append(asyncio.create_task(
                    call(client, "codex_message_send", {"text": text})))
                # arrival order = call order: the next call only once codex holds this
                # one. The first turn is held (HOLD) until all three are in, so the
                # other two wait in codex's queue however slow the machine is — with
                # a merely slow first turn, a loaded box let it end before the second
                # arrived, and the queue the test waited for never filled.
                if n == 0:
                    await asyncio.to_thread(mock_model.wait_held, "calls", 60.0)
                else:
                    await _queued(tui, user.thread_id, n)
            mock_model.release("calls")
            results = await asyncio.wait_for(asyncio.gather(*tasks), 90)
        assert [r["data"]["reply"] for r in results] == [f"MOCK REPLY: {t}" for t in texts]
        turns = (await tui.request("thread/turns/list", {
            "threadId": user.thread_id, "sortDirection": "asc"}))["data"]
        assert [t["status"] for t in turns] == ["completed"] * 4
        assert len({r["data"]["turnId"] for r in results}) == 3


async def _queued(tui: RawClient, thread_id: str, count: int, timeout: float = 60.0) -> None:
    """Until codex's queue for the thread holds `count` messages."""
    deadline = asyncio.get_running_loop().time() + timeout
    while len((await tui.request("thread/queue/list", {"threadId": thread_id}))["data"]) < count:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"codex's queue never held {count} messages")
        await asyncio.sleep(0.02)


async def test_timed_out_turn_keeps_the_thread_until_it_ends(app_server: AppServer,
                                                             workdir: Path) -> None:
    async with RawClient(app_server.url) as tui:
        user = await start_user_thread(tui, workdir, "first")
        async with Client(server_params(app_server), mode="legacy") as client:
            slow = "SLOW " + "long reply " * 4  # ~8 deltas, 0.25 s apart
            sc = await call(client, "codex_message_send", {"text": slow, "timeoutMs": 1000})
            assert sc["error"]["code"] == "TURN_TIMEOUT"
            assert sc["error"]["retryable"] is False
            timed_out = sc["error"]["details"]["turnId"]
            nxt = await call(client, "codex_message_send", {"text": "after the slow one"})
            assert nxt["data"]["reply"] == "MOCK REPLY: after the slow one"
        turns = (await tui.request("thread/turns/list", {
            "threadId": user.thread_id, "sortDirection": "asc"}))["data"]
        by_id = {t["id"]: t for t in turns}
        # the slow turn ran to its end on its own, and the next one started after it
        assert by_id[timed_out]["status"] == "completed"
        assert by_id[nxt["data"]["turnId"]]["startedAt"] >= by_id[timed_out]["completedAt"]


async def test_no_app_server_is_cannot_connect(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "codexbridge", "mcp", "--role", "claude"],
        env={**os.environ, "CODEX_BRIDGE_URL": "ws://127.0.0.1:9"})
    async with Client(params, mode="legacy") as client:
        result = await client.call_tool("codex_message_send", {"text": "anyone?"})
    assert result.is_error and result.structured_content is not None
    assert result.structured_content["error"]["code"] == "CODEX_CONNECT_FAILED"


async def test_wait_false_returns_a_receipt_and_delivery_status_follows_it(
        app_server: AppServer, workdir: Path, mock_model: Any) -> None:
    from codexbridge.host.mailboxes import inbox_dir
    from codexbridge.inbox import peek as reading

    async with RawClient(app_server.url) as tui:
        user = await start_user_thread(tui, workdir, "first")
        async with Client(server_params(app_server), mode="legacy") as client:
            sc = await call(client, "codex_message_send", {
                "text": "HOLD:mcp1 take your time", "wait": False, "replyTo": "asker"})
            data = sc["data"]
            await asyncio.to_thread(mock_model.wait_held, "mcp1", 60.0)  # still running
            assert data["deliveryId"] == data["delivery_id"] and data["threadId"] == user.thread_id
            assert data["replyTo"] == "asker" and data["hop"] == 1
            assert data["state"] in ("queued", "delivering", "awaiting-reply")
            mid = await call(client, "codex_delivery_status", {"deliveryId": data["deliveryId"]})
            assert mid["data"]["final"] is False
            mock_model.release("mcp1")
            end = await call(client, "codex_delivery_status", {
                "deliveryId": data["deliveryId"], "waitSeconds": 60})
            assert end["data"]["state"] == "delivered"
            assert end["data"]["replyPreview"].endswith("HOLD:mcp1 take your time")
            recent = await call(client, "codex_delivery_status", {})
            assert [d["id"] for d in recent["data"]["deliveries"]] == [data["deliveryId"]]
            status = await call(client, "bridge_status", {})
            assert status["data"]["deliveries"][0]["state"] == "delivered"
    [mail] = reading.peek(inbox_dir(), "asker").mails
    assert mail.extra["delivery_id"] == data["deliveryId"]
