"""Two machines on one box: Codex on "machine B" (its own CODEX_HOME and state dir)
reaches the Claude side's mailboxes on "machine A" through
`codexbridge mcp --role codex --http 127.0.0.1:<port>` (streamable HTTP, bearer token),
registered on B by `codexbridge setup codex --url …` — real codex 0.169.0 calls
`claude_message_send` and the mail lands in A's inbox. Without the token (or with a wrong
one) codex is refused and offers the model no tools; plain HTTP without it gets 401.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codexbridge.host.appserver import launch
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox.peek import peek
from tests.support.cli import run_cli
from tests.support.mock_codex import MockResponsesServer
from tests.support.raw_client import RawClient, start_turn

pytestmark = pytest.mark.real_codex

TOKEN = "cb-two-machines-0123456789abcdef"
SERVER = "codexbridge"


@pytest.fixture
def claude_machine(_isolated_state: Path) -> Iterator[str]:
    """Machine A: the HTTP MCP server on its own state (the test's CODEX_BRIDGE_HOME)."""
    proc = subprocess.Popen([sys.executable, "-m", "codexbridge", "mcp", "--role", "codex",
                             "--http", "127.0.0.1:0"],
                            env={**os.environ, "CODEX_BRIDGE_MCP_TOKEN": TOKEN},
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # printed once the socket listens
        assert "serving MCP (streamable HTTP) at http://127.0.0.1:" in first, first
        yield first.split(" at ", 1)[1].split()[0]
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def codex_machine(tmp_path: Path, codex_home: Path, claude_machine: str) -> dict[str, str]:
    """Machine B: its own state dir; `setup codex --url` writes its config.toml."""
    state_b = tmp_path / "state-b"
    res = run_cli("setup", "codex", "--url", claude_machine, "--approval", "auto",
                  env={"CODEX_HOME": str(codex_home), "CODEX_BRIDGE_HOME": str(state_b)})
    assert res.code == 0, res.err
    assert "bearer_token_env_var" in (codex_home / "config.toml").read_text()
    return {"state": str(state_b)}


async def _mcp_status(tui: RawClient, thread_id: str, since: int) -> dict[str, Any]:
    note = await tui.wait_for(
        lambda n: n.get("method") == "mcpServer/startupStatus/updated"
        and n["params"].get("name") == SERVER and n["params"].get("status") in
        ("ready", "failed"), 30, since=since)
    return dict(note["params"])


async def _thread(tui: RawClient, workdir: Path) -> tuple[str, dict[str, Any]]:
    since = tui.mark()
    result = await tui.request("thread/start", {"cwd": str(workdir), "threadSource": "user"})
    thread_id = result["thread"]["id"]
    return thread_id, await _mcp_status(tui, thread_id, since)


async def test_remote_codex_calls_claude_message_send_over_http(
        codex_bin: str, codex_env: dict[str, str], workdir: Path, tmp_path: Path,
        codex_machine: dict[str, str], mock_model: MockResponsesServer) -> None:
    env = {**codex_env, "CODEX_BRIDGE_MCP_TOKEN": TOKEN}
    app = launch(codex_bin, workdir, env, stderr_path=tmp_path / "b.stderr")
    try:
        async with RawClient(app.url) as tui:
            thread_id, status = await _thread(tui, workdir)
            assert status["status"] == "ready", status
            since = tui.mark()
            turn = await start_turn(tui, thread_id, 'MCP_CALL: claude_message_send {"text": '
                                    '"from machine B", "mailbox": "web", "new": true}')
            await tui.wait_for(lambda n: n.get("method") == "turn/completed"
                               and n["params"]["turn"]["id"] == turn, 60, since=since)
            items = [n["params"]["item"] for n in tui.notifications[since:]
                     if n.get("method") == "item/completed"
                     and n["params"]["item"].get("type") == "mcpToolCall"]
    finally:
        app.stop()
    assert [i["status"] for i in items] == ["completed"], items
    offered = mock_model.model_calls[-2].body["tools"]
    assert any(t.get("name") == f"mcp__{SERVER}" for t in offered)
    # the mail is on machine A (this test's state dir), not in B's
    assert [m.text for m in peek(inbox_dir(), "web").mails] == ["from machine B"]
    assert not Path(codex_machine["state"], "inbox", "web.jsonl").exists()


@pytest.mark.parametrize("token", [None, "cb-a-wrong-token-0123456789"])
async def test_without_the_token_codex_is_refused(
        codex_bin: str, codex_env: dict[str, str], workdir: Path, tmp_path: Path,
        codex_machine: dict[str, str], claude_machine: str, token: str | None) -> None:
    env = dict(codex_env)
    if token:
        env["CODEX_BRIDGE_MCP_TOKEN"] = token
    app = launch(codex_bin, workdir, env, stderr_path=tmp_path / "b.stderr")
    try:
        async with RawClient(app.url) as tui:
            _thread_id, status = await _thread(tui, workdir)
    finally:
        app.stop()
    assert status["status"] == "failed"
    expected = "not logged in" if token else "CODEX_BRIDGE_MCP_TOKEN"
    assert expected in str(status["error"]), status
    request = urllib.request.Request(claude_machine, method="POST", data=json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).encode(),
        headers={"content-type": "application/json",
                 "accept": "application/json, text/event-stream"})
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=10)
    assert info.value.code == 401
    assert info.value.headers["www-authenticate"] == 'Bearer realm="codexbridge"'
    assert peek(inbox_dir(), "web").mails == []
