"""codexbridge's Claude Code plugin on the real Claude Code 2.1.332 (offline, mock model).

* `claude plugin validate` passes on the repository (its marketplace) and on the plugin;
* `claude -p --plugin-dir <plugin>` in an unrelated project: the plugin's Stop hook
  delivers the session's mail and the model can call the plugin's MCP tools
  (`mcp__plugin_codexbridge_codex__<tool>`) — while the project carries a `codexbridge`
  of its own in `.venv/bin`, first on PATH, which must never run;
* two live sessions in one project never share a mailbox;
* the plugin's MCP server, after the first session, answers its start-up from the record
  that session left (mcp/startup_cache.py): it has not loaded the SDK when the first
  model request goes out, and its tools work.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from codexbridge.host.mailboxes import inbox_dir
from codexbridge.setup.claude import TOOL_PREFIX
from codexbridge.setup.mailbox import claimed, claims_dir, project_mailbox
from codexbridge.setup.where import plugin_dir
from tests.support.claude_fixtures import ClaudeHarness, TmuxClaude
from tests.support.cli import run_cli
from tests.support.helpers import wait_until
from tests.support.mock_claude import MockMessages

pytestmark = pytest.mark.real_claude

PLUGIN = plugin_dir()
REPO = str(Path(PLUGIN).parents[1])
STATUS = TOOL_PREFIX + "bridge_status"


def validate(claude: ClaudeHarness, path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([claude.binary, "plugin", "validate", path], env=claude.env(),
                          capture_output=True, text=True, timeout=60, check=False)


def test_claude_plugin_validate_passes_on_the_repo_and_the_plugin(
        claude: ClaudeHarness) -> None:
    repo = validate(claude, REPO)
    assert repo.returncode == 0, repo.stdout + repo.stderr
    assert "Validating marketplace manifest" in repo.stdout
    plugin = validate(claude, PLUGIN)
    assert plugin.returncode == 0, plugin.stdout + plugin.stderr
    out = plugin.stdout
    assert "✔ Validation passed" in out and "warning" not in out.split("Provides:")[0]
    for part in ('hooks: SessionStart command sh', 'hooks: Stop command sh',
                 "mcpServers: codex stdio sh", "skills: codexbridge:talk-to-codex",
                 "commands: codexbridge:send", "commands: codexbridge:handoff"):
        assert part in out, out


def _tool_results(mock: MockMessages) -> list[dict[str, Any]]:
    out = []
    for call in mock.model_calls:
        msgs = call.messages
        content = msgs[-1].get("content") if msgs and msgs[-1].get("role") == "user" else None
        if isinstance(content, list):
            out += [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    return out


def trap(project: Path) -> Path:
    """A `codexbridge` inside the project that only leaves a mark: the plugin must never
    run it, however PATH is ordered."""
    marker = project / "TRAP-RAN"
    fake = project / ".venv" / "bin" / "codexbridge"
    fake.parent.mkdir(parents=True)
    fake.write_text(f"#!/bin/sh\ntouch {marker}\n")
    fake.chmod(0o755)
    return marker


def test_an_unrelated_project_gets_mail_through_the_plugin_and_sees_its_tools(
        claude: ClaudeHarness, claude_project: Path, mock_messages: MockMessages) -> None:
    marker = trap(claude_project)
    session = str(uuid.uuid4())
    name = project_mailbox(os.path.realpath(claude_project))
    pushed = run_cli("inbox", "push", "--new", "--to", name, "hello from Codex, via the plugin")
    assert pushed.code == 0, pushed.err
    path = f"{claude_project}/.venv/bin:{claude.env()['PATH']}"
    started = time.monotonic()
    proc = claude.run_p(claude_project, f"CALL_TOOL {STATUS} {{}}", "--plugin-dir", PLUGIN,
                        "--session-id", session, "--allowedTools", STATUS,
                        env={"PATH": path}, timeout=120)
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    # the Stop hook delivered the mail into this session
    feedback = mock_messages.stop_feedback()
    assert any("hello from Codex, via the plugin" in f for f in feedback), feedback
    # the plugin's MCP server answered, found through ToolSearch like any deferred tool
    results = [r for r in _tool_results(mock_messages) if '"ok":' in str(r.get("content"))]
    assert results, [c.tool_names for c in mock_messages.model_calls]
    status = json.loads(results[0]["content"])
    assert status["ok"] is True and status["data"]["role"] == "claude"
    assert not marker.exists(), "the project's own .venv/bin/codexbridge ran"
    assert claimed(inbox_dir(), session) == name
    listed = json.loads(run_cli("inbox", "list", "--json").out)
    mine = [m for m in listed["mailboxes"] if m["name"] == name]
    assert mine and mine[0]["listener"]["session_id"] == session and mine[0]["pending"] == 0
    print(f"claude -p with the plugin: {took:.2f} s")


def test_two_live_sessions_in_one_project_get_two_mailboxes(
        claude: ClaudeHarness, claude_project: Path, mock_messages: MockMessages) -> None:
    claude.seed_interactive(claude_project)
    first = TmuxClaude(claude, claude_project)
    base = project_mailbox(os.path.realpath(claude_project))
    claims = Path(claims_dir(inbox_dir()))
    try:
        first.start("--plugin-dir", PLUGIN)
        def holding() -> list[str]:
            """The sessions whose claim names the project's own mailbox."""
            return [p.name for p in claims.glob("*-*")
                    if claimed(str(claims.parent), p.name) == base]

        held = wait_until(holding, 30, "the first session's claim on the project's name",
                          first.screen)
        second = str(uuid.uuid4())
        proc = claude.run_p(claude_project, "hi", "--plugin-dir", PLUGIN,
                            "--session-id", second, timeout=120)
        assert proc.returncode == 0, proc.stderr
        got = (claims / second).read_text().splitlines()[0]
        assert got == f"{base}-{second.replace('-', '')[:8]}"
        # the interactive session keeps the project's name and its own listener record
        listed = {m["name"]: m for m in json.loads(run_cli("inbox", "list", "--json").out)
                  ["mailboxes"]}
        assert listed[base]["listener"]["session_id"] == held[0]
        assert listed[got]["listener"]["session_id"] == second
    finally:
        first.stop()


def _mcp_servers(session: str) -> list[int]:
    """Pids of `codexbridge mcp --role claude` processes Claude started for `session`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                if b"codexbridge\0mcp\0--role\0claude" not in fh.read():
                    continue
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if f"CLAUDE_CODE_SESSION_ID={session}".encode() in fh.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def _loaded_the_sdk(pid: int) -> bool:
    with open(f"/proc/{pid}/maps", encoding="utf-8") as fh:
        return "_pydantic_core" in fh.read()


def test_after_the_first_session_the_mcp_server_is_a_warm_start(
        claude: ClaudeHarness, claude_project: Path, mock_messages: MockMessages) -> None:
    run_dir = tempfile.mkdtemp(prefix="cbw-", dir="/tmp")  # its own start-up record
    seen: dict[str, list[bool]] = {}

    def look(req: Any) -> None:
        """At the session's first model request its MCP server is up: what is it?"""
        sid = req.session_id
        if sid and req.is_model_call and sid not in seen:
            seen[sid] = [_loaded_the_sdk(pid) for pid in _mcp_servers(sid)]

    mock_messages.on_request = look
    try:
        for n in range(2):
            session = str(uuid.uuid4())
            proc = claude.run_p(claude_project, f"CALL_TOOL {STATUS} {{}}", "--plugin-dir",
                                PLUGIN, "--session-id", session, "--allowedTools", STATUS,
                                env={"XDG_RUNTIME_DIR": run_dir}, timeout=120)
            assert proc.returncode == 0, proc.stderr
            assert seen[session] == [n == 0], seen  # cold first, then from the record
            assert list((Path(run_dir) / "codexbridge").glob("mcp-start-*.json"))
        results = [r for r in _tool_results(mock_messages) if '"ok":' in str(r.get("content"))]
        assert len(results) == 2 and all(json.loads(r["content"])["ok"] for r in results)
        assert not mock_messages.errors
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
