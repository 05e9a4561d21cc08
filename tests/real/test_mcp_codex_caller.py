"""Codex 0.169.0 as the caller: `codexbridge mcp --role codex` registered in its
config.toml, the mock Responses model calling `claude_message_send`.

What codex 0.169.0 does, measured here:
* MCP tools reach the model as ONE Responses tool `{"type": "namespace", "name":
  "mcp__<server>", "description": <server instructions>, "tools": [<function>...]}`
  whose functions carry the plain tool names. The model calls one with a
  `function_call` item `{"name": "<tool>", "namespace": "mcp__<server>"}`; the flat name
  `mcp__<server>__<tool>` is answered "unsupported call".
* The result goes back to the model as `function_call_output` text
  "Wall time: … seconds\\nOutput:\\n<structuredContent as compact JSON>".
* `default_tools_approval_mode` "auto" (the default) and "approve" ask nobody. "writes"
  asks — for tools not marked readOnlyHint only — the app-server's subscribed clients
  with `mcpServer/elicitation/request` {mode: "form", message: 'Allow the <server> MCP
  server to run tool "<tool>"?', requestedSchema: {type: object, properties: {}},
  _meta: {codex_approval_kind: "mcp_tool_call", tool_name, tool_params,
  tool_params_display, tool_annotations, tool_description}}; "prompt" asks the same for
  every tool. `{"action": "accept", "content": {}}` runs it; `{"action": "decline"}`
  fails the call with "user rejected MCP tool call".

The mock's built-in rule `MCP_CALL: <tool> <json>` makes the model call that tool. Codex
starts MCP servers per thread in the background; a test waits for its
`mcpServer/startupStatus/updated` "ready" before the first turn, so the model's first
request always offers the tools.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codexbridge.host.appserver import AppServerProcess as AppServer
from codexbridge.host.appserver import launch as launch_app_server
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox.peek import peek
from tests.support.mock_codex import MockResponsesServer
from tests.support.raw_client import RawClient, start_turn, start_user_thread

pytestmark = pytest.mark.real_codex

SERVER = "codexbridge"
ELICITATION = "mcpServer/elicitation/request"


def register(codex_home: Path, approval_mode: str | None) -> None:
    """What `codex mcp add` + a tool_timeout_sec line would write."""
    env = {"CODEX_BRIDGE_HOME": os.environ["CODEX_BRIDGE_HOME"],
           "CODEX_BRIDGE_MAILBOX": "bridge"}
    lines = ["", f"[mcp_servers.{SERVER}]", f"command = {json.dumps(sys.executable)}",
             'args = ["-m", "codexbridge", "mcp", "--role", "codex"]',
             "tool_timeout_sec = 60"]
    if approval_mode:
        lines.append(f'default_tools_approval_mode = "{approval_mode}"')
    lines += ["", f"[mcp_servers.{SERVER}.env]",
              *(f"{k} = {json.dumps(v)}" for k, v in env.items()), ""]
    with open(codex_home / "config.toml", "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines))


@pytest.fixture
def launch(codex_bin: str, workdir: Path, codex_home: Path, codex_env: dict[str, str],
           tmp_path: Path) -> Iterator[Any]:
    servers: list[AppServer] = []

    def start(approval_mode: str | None = None) -> AppServer:
        register(codex_home, approval_mode)
        server = launch_app_server(codex_bin, workdir, codex_env,
                                  stderr_path=tmp_path / "app-server.stderr")
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


async def run_mcp_turn(tui: RawClient, thread_id: str, text: str,
                       elicitation_answer: dict[str, Any] | None = None
                       ) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """Start a turn; answer codex's server requests; return (turn, requests, mcp item)."""
    since = tui.mark()
    turn_id = await start_turn(tui, thread_id, text)
    asked: list[dict[str, Any]] = []

    async def answer() -> None:
        while True:
            req = await tui.next_server_request(timeout=120)
            asked.append(req)
            if req["method"] == ELICITATION and elicitation_answer is not None:
                await tui.respond(req["id"], elicitation_answer)
            else:
                await tui.respond_error(req["id"], "not expected by this test")

    answering = asyncio.create_task(answer())
    try:
        done = await tui.wait_for(lambda n: n.get("method") == "turn/completed"
                                  and n["params"]["turn"]["id"] == turn_id, 90, since=since)
    finally:
        answering.cancel()
    items = [n["params"]["item"] for n in tui.notifications[since:]
             if n.get("method") == "item/completed"
             and n["params"]["item"].get("type") == "mcpToolCall"]
    assert len(items) == 1, items
    return done["params"]["turn"], asked, items[0]


def pending(name: str) -> list[str]:
    return [m.text for m in peek(inbox_dir(), name).mails]


async def test_codex_model_calls_claude_message_send_and_the_mail_lands(
        launch: Any, workdir: Path, mock_model: MockResponsesServer) -> None:
    app_server = launch()
    async with RawClient(app_server.url) as tui:
        user = await start_user_thread(tui, workdir, "first", mcp_servers=(SERVER,))
        offered = mock_model.model_calls[-1].body["tools"]
        ns = next(t for t in offered if t.get("name") == f"mcp__{SERVER}")
        assert ns["type"] == "namespace"
        assert {t["name"] for t in ns["tools"]} == {
            "bridge_status", "bridge_output_read", "claude_mailboxes_list",
            "claude_mailbox_peek", "claude_message_send", "bridge_handoff"}
        assert "role codex" in ns["description"]
        turn, asked, item = await run_mcp_turn(
            tui, user.thread_id,
            'MCP_CALL: claude_message_send {"text": "Codex here: tests pass"}')
    assert asked == []  # the default approval mode ("auto") asks nobody
    assert turn["status"] == "completed"
    assert item["server"] == SERVER and item["tool"] == "claude_message_send"
    assert item["status"] == "completed"
    assert pending("bridge") == ["Codex here: tests pass"]
    output = mock_model.model_calls[-1].last_input_item
    assert output is not None and output["type"] == "function_call_output"
    assert output["output"].startswith("Wall time:")
    sent = json.loads(output["output"].split("Output:\n", 1)[1])
    assert sent["ok"] is True and sent["data"]["mailbox"] == "bridge"


async def test_expect_reply_from_codexs_model_names_the_calling_thread(
        launch: Any, workdir: Path, mock_model: MockResponsesServer) -> None:
    """codex gives its MCP servers no CODEX_THREAD_ID; the thread id comes in each
    call's _meta — proven with the real binary."""
    from codexbridge.messages.records import DeliveryStore

    app_server = launch()
    async with RawClient(app_server.url) as tui:
        user = await start_user_thread(tui, workdir, "first", mcp_servers=(SERVER,))
        turn, _asked, item = await run_mcp_turn(
            tui, user.thread_id, 'MCP_CALL: claude_message_send {"text": "which tests '
            'cover auth?", "expectReply": true}')
    assert turn["status"] == "completed" and item["status"] == "completed"
    output = mock_model.model_calls[-1].last_input_item
    assert output is not None
    sent = json.loads(output["output"].split("Output:\n", 1)[1])["data"]
    assert sent["expectReplyFrom"] == user.thread_id and sent["hop"] == 1
    [mail] = peek(inbox_dir(), "bridge").mails
    assert mail.extra["expect_reply"] == {"thread": user.thread_id}
    record = DeliveryStore().get(sent["request"])
    assert record is not None and record.thread_id == user.thread_id


async def test_writes_mode_asks_by_elicitation_and_accept_runs_the_tool(
        launch: Any, workdir: Path) -> None:
    app_server = launch("writes")
    async with RawClient(app_server.url) as tui:
        user = await start_user_thread(tui, workdir, "first", mcp_servers=(SERVER,))
        turn, asked, item = await run_mcp_turn(
            tui, user.thread_id, 'MCP_CALL: claude_message_send {"text": "approved mail"}',
            {"action": "accept", "content": {}})
        # a read-only tool is not asked about, even in "writes" mode
        _turn2, asked2, item2 = await run_mcp_turn(
            tui, user.thread_id, 'MCP_CALL: claude_mailbox_peek {"mailbox": "bridge"}',
            {"action": "decline"})
    assert [r["method"] for r in asked] == [ELICITATION]
    params = asked[0]["params"]
    assert params["threadId"] == user.thread_id and params["serverName"] == SERVER
    assert params["mode"] == "form"
    assert params["message"] == f'Allow the {SERVER} MCP server to run tool "claude_message_send"?'
    assert params["requestedSchema"] == {"type": "object", "properties": {}}
    meta = params["_meta"]
    assert meta["codex_approval_kind"] == "mcp_tool_call"
    assert meta["tool_name"] == "claude_message_send"
    assert meta["tool_params"] == {"text": "approved mail"}
    assert meta["tool_annotations"]["readOnlyHint"] is False
    assert turn["status"] == "completed" and item["status"] == "completed"
    assert asked2 == [] and item2["status"] == "completed"
    assert pending("bridge") == ["approved mail"]


async def test_writes_mode_decline_sends_nothing(launch: Any, workdir: Path,
                                                 mock_model: MockResponsesServer) -> None:
    app_server = launch("writes")
    async with RawClient(app_server.url) as tui:
        user = await start_user_thread(tui, workdir, "first", mcp_servers=(SERVER,))
        turn, asked, item = await run_mcp_turn(
            tui, user.thread_id, 'MCP_CALL: claude_message_send {"text": "refused mail"}',
            {"action": "decline"})
    assert [r["method"] for r in asked] == [ELICITATION]
    assert turn["status"] == "completed"
    assert item["status"] == "failed"
    assert item["error"] == {"message": "user rejected MCP tool call"}
    assert pending("bridge") == []
    output = mock_model.model_calls[-1].last_input_item
    assert output is not None and "user rejected MCP tool call" in json.dumps(output)


async def bridge_send(app_server: AppServer, text: str) -> dict[str, Any]:
    """codex_message_send through a role-claude server, as Claude Code would call it."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "codexbridge", "mcp", "--role", "claude"],
        env={**os.environ, "CODEX_BRIDGE_URL": app_server.url})
    async with Client(params, mode="legacy") as client:
        result = await client.call_tool("codex_message_send", {"text": text,
                                                               "timeoutMs": 60000})
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def test_round_trip_through_both_roles(launch: Any, workdir: Path) -> None:
    """Claude's tool starts a Codex turn; in it Codex calls claude_message_send; the mail
    lands and the turn's reply comes back to Claude's tool — one loop, both servers."""
    app_server = launch()
    async with RawClient(app_server.url) as tui:
        await start_user_thread(tui, workdir, "first", mcp_servers=(SERVER,))
        sc = await bridge_send(app_server, 'MCP_CALL: claude_message_send {"text": "loop mail"}')
    assert sc["ok"] is True, sc
    assert sc["data"]["reply"].startswith("MOCK DONE: Wall time:")
    assert '"ok":true' in sc["data"]["reply"]
    assert pending("bridge") == ["loop mail"]


async def test_in_a_bridge_turn_codex_mcp_approvals_go_to_the_human(
        launch: Any, workdir: Path) -> None:
    """With default_tools_approval_mode = "writes", codex asks every subscribed client
    (`mcpServer/elicitation/request` with `_meta.codex_approval_kind: "mcp_tool_call"`).
    In a turn started by codex_message_send (approvals `tui`), the bridge treats that as an
    approval and stays silent: the human answers in the TUI."""
    app_server = launch("writes")
    async with RawClient(app_server.url) as tui:
        await start_user_thread(tui, workdir, "first", mcp_servers=(SERVER,))
        send = asyncio.create_task(bridge_send(
            app_server, 'MCP_CALL: claude_message_send {"text": "the human said yes"}'))
        request = await tui.next_server_request(timeout=60)
        assert request["method"] == ELICITATION
        await asyncio.sleep(0.3)
        assert not send.done()  # the bridge left the decision to the human
        await tui.respond(request["id"], {"action": "accept", "content": {}})
        sc = await send
    assert sc["ok"] is True, sc
    [asked] = sc["data"]["approvals"]
    assert asked["method"] == ELICITATION
    assert asked["outcome"] == "answered in the TUI"
    assert pending("bridge") == ["the human said yes"]
