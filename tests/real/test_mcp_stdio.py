"""`codexbridge mcp` as a real child process, driven by the official SDK's stdio client.

No agent binaries are involved: this is the process Claude Code and Codex start, spoken
to the way they speak to it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from mcp import Client, StdioServerParameters

from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox.location import mail_path

CODEX_TOOLS = {"bridge_status", "bridge_output_read", "claude_mailboxes_list",
               "claude_mailbox_peek", "claude_message_send", "bridge_handoff"}
CLAUDE_TOOLS = {"bridge_status", "bridge_output_read", "codex_threads_list",
                "codex_thread_read", "codex_message_send", "codex_delivery_status",
                "bridge_handoff"}


def params(*args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "codexbridge", "mcp", *args],
                                 env={**os.environ, **(env or {})})


async def test_codex_role_over_stdio_sends_mail() -> None:
    async with Client(params("--role", "codex"), mode="legacy") as client:
        assert client.server_info is not None and client.server_info.name == "codexbridge"
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == CODEX_TOOLS
        result = await client.call_tool("claude_message_send",
                                        {"text": "hello Claude, from the stdio smoke",
                                         "mailbox": "smoke"})
        assert not result.is_error, result.content
        sc = result.structured_content
        assert sc is not None and sc["ok"] is True
    path = Path(mail_path(inbox_dir(), "smoke"))
    [line] = path.read_text(encoding="utf-8").splitlines()
    mail = json.loads(line)
    assert mail["text"] == "hello Claude, from the stdio smoke"
    assert mail["to"] == "smoke" and mail["from"] == "codex" and mail["id"] == sc["data"]["id"]


async def test_role_from_environment_and_auto_negotiation() -> None:
    async with Client(params(env={"CODEX_BRIDGE_MCP_ROLE": "claude"})) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == CLAUDE_TOOLS
        status = await client.call_tool("bridge_status", {})
        assert status.structured_content is not None
        assert status.structured_content["data"]["role"] == "claude"


def test_sigint_ends_the_server_at_once_and_quietly() -> None:
    """Claude Code sends SIGINT, then SIGTERM 100 ms later (claude-code.md §7)."""
    proc = subprocess.Popen([sys.executable, "-m", "codexbridge", "mcp", "--role", "codex"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}
        proc.stdin.write((json.dumps(init) + "\n").encode())
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        assert answer["id"] == 1 and "result" in answer
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert code == 0
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


def test_stdin_eof_ends_the_server() -> None:
    proc = subprocess.run([sys.executable, "-m", "codexbridge", "mcp", "--role", "claude"],
                          input=b"", capture_output=True, timeout=30, check=False)
    assert proc.returncode == 0 and proc.stdout == b""
    assert b"Traceback" not in proc.stderr
