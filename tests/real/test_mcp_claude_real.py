"""Claude → Codex through MCP, end to end, on the real binaries.

Claude Code 2.1.332 (`-p`, mock Messages API) starts `codexbridge mcp --role claude`
from an MCP config; the mock model calls `mcp__codexbridge__codex_message_send`
(ToolSearch first: MCP tools are deferred); the tool runs a turn on the real codex
0.169.0 app-server (mock Responses model) and Codex's reply reaches the mock in
Claude's next request.

Measured on 2.1.332: a successful result reaches the model as the structuredContent
JSON (`{"ok":true,"data":{…,"reply":…},"warnings":[]}`), an error result as its text
content with `is_error: true` — which is why error texts carry the whole error object.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from codexbridge.host.appserver import AppServerProcess as AppServer
from codexbridge.messages.records import DeliveryStore, ToCodex
from tests.support.claude_fixtures import ClaudeHarness
from tests.support.mock_claude import MockMessages, RecordedRequest
from tests.support.raw_client import RawClient, start_user_thread

pytestmark = [pytest.mark.real_claude, pytest.mark.real_codex]

SERVER = "codexbridge"
SEND = f"mcp__{SERVER}__codex_message_send"


@pytest.fixture
def cproject(tmp_path: Path) -> Path:
    """Claude's project dir (the `claude_project` fixture would collide with `workdir`)."""
    path = tmp_path / "claude-project"
    path.mkdir()
    return path


def write_mcp_config(path: Path, app_server: AppServer) -> Path:
    """What `claude mcp add --scope project codexbridge -e … -- <python> -m codexbridge
    mcp --role claude` writes into `.mcp.json`."""
    path.write_text(json.dumps({"mcpServers": {SERVER: {
        "type": "stdio", "command": sys.executable,
        "args": ["-m", "codexbridge", "mcp", "--role", "claude"],
        "env": {"CODEX_BRIDGE_URL": app_server.url,
                "CODEX_BRIDGE_HOME": os.environ["CODEX_BRIDGE_HOME"]}}}}), encoding="utf-8")
    return path


def tool_results(req: RecordedRequest) -> list[dict[str, Any]]:
    msgs = req.messages
    if not msgs or msgs[-1].get("role") != "user":
        return []
    content = msgs[-1].get("content")
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] \
        if isinstance(content, list) else []


def run_claude(claude: ClaudeHarness, project: Path, config: Path, prompt: str
               ) -> Any:
    return claude.run_p(project, prompt, "--mcp-config", str(config), "--strict-mcp-config",
                        "--allowedTools", SEND, timeout=120)


async def test_claude_calls_codex_message_send_and_the_reply_comes_back(
        claude: ClaudeHarness, cproject: Path, mock_messages: MockMessages,
        app_server: AppServer, workdir: Path, tmp_path: Path) -> None:
    config = write_mcp_config(tmp_path / "mcp.json", app_server)
    async with RawClient(app_server.url) as tui:
        user = await start_user_thread(tui, workdir, "first message from the human")
        since = tui.mark()
        prompt = f'CALL_TOOL {SEND} {{"text": "Claude here: please run the tests"}}'
        proc = await asyncio.to_thread(run_claude, claude, cproject, config, prompt)
        assert proc.returncode == 0, proc.stderr
        # the TUI stand-in saw the turn the tool started, on the human's thread
        started = await tui.wait_for(
            lambda n: n.get("method") == "item/started"
            and n["params"]["item"].get("type") == "userMessage", since=since, timeout=10)
        assert started["params"]["threadId"] == user.thread_id
    calls = mock_messages.model_calls
    names = [c.tool_names for c in calls]
    assert SEND not in names[0] and "ToolSearch" in names[0]  # deferred until searched
    assert any(SEND in n for n in names[1:])
    results = [r for c in calls for r in tool_results(c)]
    sent = [r for r in results if isinstance(r.get("content"), str)
            and '"reply"' in r["content"]]
    assert len(sent) == 1, results
    payload = json.loads(sent[0]["content"])
    assert payload["ok"] is True and not sent[0].get("is_error")
    assert payload["data"]["reply"] == "MOCK REPLY: Claude here: please run the tests"
    assert payload["data"]["threadId"] == user.thread_id
    # `claude -p` takes no MCP task (measured, spikes/mcp_tasks): today's inline call
    record = DeliveryStore().get(payload["data"]["deliveryId"], ToCodex)
    assert record is not None and not record.task and record.state.value == "delivered"
    # the model's last word is the mock's echo of that tool result
    assert claude.result_json(proc)["result"].startswith("TOOL_RESULT_SEEN: ")


async def test_an_error_reaches_claude_as_text_with_the_error_object(
        claude: ClaudeHarness, cproject: Path, mock_messages: MockMessages,
        app_server: AppServer, workdir: Path, tmp_path: Path) -> None:
    config = write_mcp_config(tmp_path / "mcp.json", app_server)
    async with RawClient(app_server.url) as tui:
        await start_user_thread(tui, workdir, "first")
        prompt = f'CALL_TOOL {SEND} {{"text": "x", "approvals": "accept"}}'
        proc = await asyncio.to_thread(run_claude, claude, cproject, config, prompt)
    assert proc.returncode == 0, proc.stderr
    errors = [r for c in mock_messages.model_calls for r in tool_results(c) if r.get("is_error")]
    assert len(errors) == 1
    text = errors[0]["content"] if isinstance(errors[0]["content"], str) else json.dumps(
        errors[0]["content"])
    assert text.startswith("INVALID_ARGUMENT: ")
    assert "accept is refused over MCP" in text
    body = json.loads(text.split("\n", 1)[1])
    assert body["error"]["code"] == "INVALID_ARGUMENT" and body["error"]["retryable"] is False


async def test_server_leaves_when_claude_exits(claude: ClaudeHarness, cproject: Path,
                                               mock_messages: MockMessages,
                                               app_server: AppServer, tmp_path: Path) -> None:
    """Claude stops its MCP servers (SIGINT, then SIGTERM 100 ms later); none is left."""
    config = write_mcp_config(tmp_path / "mcp.json", app_server)
    proc = await asyncio.to_thread(run_claude, claude, cproject, config,
                                   f"CALL_TOOL mcp__{SERVER}__bridge_status {{}}")
    assert proc.returncode == 0, proc.stderr
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _our_servers(tmp_path):
        time.sleep(0.05)
    assert _our_servers(tmp_path) == []


def _our_servers(tmp_path: Path) -> list[int]:
    """Pids of `codexbridge mcp` processes whose environment names this test's state dir."""
    home = os.environ["CODEX_BRIDGE_HOME"].encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read()
            if b"codexbridge\0mcp" not in cmd:
                continue
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if home in fh.read():
                    found.append(int(entry))
        except OSError:
            continue
    del tmp_path
    return found
