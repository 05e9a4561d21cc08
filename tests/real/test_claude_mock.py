"""The mock Messages API's tool rules, proven against the real Claude Code binary.

`CALL_TOOL <name> <json>` makes the mock call a tool: a built-in one directly, a
deferred MCP tool through the ToolSearch two-step (claude-code.md §3). The MCP server
here is a few lines of raw JSON-RPC over stdio, so the test does not pay for importing
the mcp SDK.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.claude_fixtures import ClaudeHarness
from tests.support.mock_claude import MockMessages

pytestmark = pytest.mark.real_claude

ECHO_SERVER = r'''
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, rid = msg.get("method"), msg["id"]
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}},
                  "serverInfo": {"name": "echo", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "echo", "description": "Echo text back.",
                             "inputSchema": {"type": "object",
                                             "properties": {"text": {"type": "string"}},
                                             "required": ["text"]}}]}
    elif method == "tools/call":
        text = msg["params"]["arguments"]["text"]
        result = {"content": [{"type": "text", "text": "ECHO:" + text}]}
    elif method == "ping":
        result = {}
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {
            "code": -32601, "message": "method not found"}}) + "\n")
        sys.stdout.flush()
        continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n")
    sys.stdout.flush()
'''


def test_call_tool_runs_a_builtin_tool(claude: ClaudeHarness, claude_project: Path,
                                       mock_messages: MockMessages) -> None:
    prompt = 'CALL_TOOL Bash {"command": "echo bash-ran-$((6*7))"}'
    proc = claude.run_p(claude_project, prompt, "--allowedTools", "Bash")
    assert proc.returncode == 0, proc.stderr
    calls = mock_messages.model_calls
    assert len(calls) == 2
    assert "bash-ran-42" in calls[1].tail_text()
    assert claude.result_json(proc)["result"].startswith("TOOL_RESULT_SEEN: bash-ran-42")


def test_call_tool_reaches_a_deferred_mcp_tool_via_toolsearch(
        claude: ClaudeHarness, claude_project: Path, mock_messages: MockMessages) -> None:
    server = claude_project / "echo_server.py"
    server.write_text(ECHO_SERVER)
    (claude_project / ".mcp.json").write_text(json.dumps({"mcpServers": {"echo": {
        "type": "stdio", "command": sys.executable, "args": [str(server)]}}}))
    prompt = 'CALL_TOOL mcp__echo__echo {"text": "ping"}'
    proc = claude.run_p(claude_project, prompt, "--allowedTools", "mcp__echo__echo")
    assert proc.returncode == 0, proc.stderr
    calls = mock_messages.model_calls
    assert "mcp__echo__echo" not in calls[0].tool_names  # deferred at first
    assert len(calls) == 3  # prompt → ToolSearch → the tool → its result
    assert "mcp__echo__echo" in calls[1].tool_names
    assert "ECHO:ping" in calls[2].tail_text()
    assert claude.result_json(proc)["result"].startswith("TOOL_RESULT_SEEN:")
