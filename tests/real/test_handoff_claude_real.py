"""Handoff Codex → Claude Code on the real binaries: a codex 0.169.0 app-server (the
mock Responses API) holds the thread; Claude Code 2.1.332 (`claude -p`, hooks installed
by `install_hook.install`: Stop and SessionStart) runs against the mock Messages API.

    mail     the Stop hook hands the delta over as one block at the session's next stop
    resume   a stopped session's SessionStart hook (`claude -p --resume`) gets it as
             additionalContext — exactly once across two resumes
    canary   doctor over a real transcript whose record types were renamed
    MCP      `bridge_handoff` on the codex role, over stdio, into the same mailbox
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from codexbridge.host.appserver import AppServerProcess as AppServer
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import peek as reading
from codexbridge.messages.listeners import record_listener, session_path
from codexbridge.setup.claude import install_hooks as install
from tests.support.claude_fixtures import ClaudeHarness
from tests.support.cli import arun_cli
from tests.support.handoff_real import CODEX_SAID_AFTER_TOOL, handoff, quiet_planner, state
from tests.support.mock_claude import MockMessages
from tests.support.mock_codex import MockResponsesServer
from tests.support.raw_client import RawClient, run_turn, start_user_thread

pytestmark = [pytest.mark.real_codex, pytest.mark.real_claude]

TOOL_COMMAND = "printf 'CODEX%sTOOL' -SECRET-"
TOOL_OUTPUT = "CODEX-SECRET-TOOL"
ADDED = "SessionStart hook additional context"


@pytest.fixture
def mock_model() -> Iterator[MockResponsesServer]:
    with MockResponsesServer(planner=quiet_planner) as mock:
        yield mock


async def codex_thread(url: str, workdir: Path) -> str:
    """A thread with two turns: the human's words, then a command."""
    async with RawClient(url) as tui:
        user = await start_user_thread(tui, workdir, "CODEX-HUMAN-ONE plan the migration")
        done = await run_turn(tui, user.thread_id, f"RUN_SANDBOXED: {TOOL_COMMAND}")
        assert done.status == "completed" and done.reply == CODEX_SAID_AFTER_TOOL
        return user.thread_id


def first_run(claude: ClaudeHarness, workdir: Path) -> str:
    """One `claude -p` turn: the hooks register the session as mailbox "web"."""
    proc = claude.run_p(workdir, "hello from the human")
    assert proc.returncode == 0, proc.stderr
    sid = str(claude.result_json(proc)["session_id"])
    listener = json.loads(Path(session_path(inbox_dir(), "web")).read_text())
    assert listener["session_id"] == sid and listener["transcript_path"].endswith(".jsonl")
    return sid


async def test_the_stop_hook_brings_one_block_with_the_codex_conversation(
        claude: ClaudeHarness, mock_messages: MockMessages, app_server: AppServer,
        workdir: Path) -> None:
    install(str(workdir), "web")
    thread = await codex_thread(app_server.url, workdir)
    sid = await asyncio.to_thread(first_run, claude, workdir)
    out = await handoff("--to", "claude", "--via", "mail", "--project", str(workdir),
                        "--note", "Decisions: sqlite stays\nNext: write the down-migration",
                        url=app_server.url)
    # the session has stopped: the mail is parked until it runs again, not delivered
    assert out["via"] == "mail" and out["state"] == "parked" and not out["delivered"]
    assert out["action"].endswith(f"claude --resume {sid}") and out["messages"] == 4
    (mail,) = reading.peek(inbox_dir(), "web").mails
    assert mail.extra["handoff"] == out["handoffId"]
    before = len(mock_messages.model_calls)
    proc = await asyncio.to_thread(claude.run_p, workdir, "carry on", "--resume", sid)
    assert proc.returncode == 0, proc.stderr
    blocks = [fb for r in mock_messages.model_calls[before:] if (fb := r.stop_feedback())]
    assert len(blocks) == 1, blocks
    block = blocks[0]
    for words in ("CODEX-HUMAN-ONE plan the migration",
                  "MOCK REPLY: CODEX-HUMAN-ONE plan the migration", CODEX_SAID_AFTER_TOOL,
                  "sqlite stays", "write the down-migration", out["full"],
                  f"[handoff {out['handoffId']} through codexbridge · from Codex to Claude Code"):
        assert words in block, words
    assert TOOL_OUTPUT not in block
    assert reading.peek(inbox_dir(), "web").mails == []
    marks = state(str(workdir))["knownBy"][f"claude:{sid}"]
    assert list(marks) == [f"codex:{thread}"]


async def test_a_stopped_session_gets_it_on_resume_exactly_once(
        claude: ClaudeHarness, mock_messages: MockMessages, app_server: AppServer,
        workdir: Path) -> None:
    install(str(workdir), "web")
    await codex_thread(app_server.url, workdir)
    sid = await asyncio.to_thread(first_run, claude, workdir)
    out = await handoff("--to", "claude", "--project", str(workdir), url=app_server.url)
    assert out["via"] == "resume" and not out["delivered"]  # chosen: the session is gone
    assert out["state"] == "waiting-for-resume"
    assert Path(out["pendingFile"]).exists()
    assert state(str(workdir))["knownBy"] == {}  # not arrived yet: no mark moved
    hid = out["handoffId"]

    before = len(mock_messages.model_calls)
    proc = await asyncio.to_thread(claude.run_p, workdir, "RESUME-ONE", "--resume", sid)
    assert proc.returncode == 0, proc.stderr
    first = mock_messages.model_calls[before:]
    assert first, "no model request"
    text = first[0].all_text()
    assert f"{ADDED}: [handoff {hid} through codexbridge" in text
    assert "CODEX-HUMAN-ONE plan the migration" in text and TOOL_OUTPUT not in text
    assert text.count(hid) >= 1
    assert not Path(out["pendingFile"]).exists()
    after = state(str(workdir))
    assert after["pending"] == {} and after["history"][-1]["by"] == "the SessionStart hook"
    assert f"claude:{sid}" in after["knownBy"]

    before = len(mock_messages.model_calls)
    proc = await asyncio.to_thread(claude.run_p, workdir, "RESUME-TWO", "--resume", sid)
    assert proc.returncode == 0, proc.stderr
    second = mock_messages.model_calls[before:][0].all_text()
    # the history still holds the first hand-over; nothing was added a second time
    assert second.count(f"{ADDED}: [handoff h_") == text.count(
        f"{ADDED}: [handoff h_") == 1
    status = await arun_cli("handoff", "status", "--project", str(workdir), "--json")
    assert json.loads(status.out)["targets"][0]["pending"] is None


async def test_doctor_turns_red_on_a_transcript_with_renamed_record_types(
        claude: ClaudeHarness, workdir: Path, tmp_path: Path) -> None:
    install(str(workdir), "web")
    await asyncio.to_thread(first_run, claude, workdir)
    real = json.loads(Path(session_path(inbox_dir(), "web")).read_text())["transcript_path"]
    drifted = tmp_path / "drifted.jsonl"
    shutil.copy(real, drifted)
    text = drifted.read_text(encoding="utf-8")
    drifted.write_text(text.replace('"type":"user"', '"type":"human_turn"')
                       .replace('"type":"assistant"', '"type":"model_turn"'), encoding="utf-8")
    record_listener(inbox_dir(), "old", {"cwd": str(workdir), "session_id": "drifted-session",
                                         "transcript_path": str(drifted)}, "hook")
    res = await arun_cli("doctor", "--project", str(workdir), "--url", "ws://127.0.0.1:9",
                         "--json")
    rows = {c["name"]: c for c in json.loads(res.out)["checks"]}
    assert rows["handoff-claude:web"]["status"] == "OK", rows["handoff-claude:web"]
    red = rows["handoff-claude:old"]
    assert red["status"] == "FAIL" and str(drifted) in red["finding"]
    assert "human_turn" in red["finding"] and res.code == 1


async def test_codex_calls_bridge_handoff_over_mcp(
        claude: ClaudeHarness, mock_messages: MockMessages, app_server: AppServer,
        workdir: Path) -> None:
    install(str(workdir), "web")
    thread = await codex_thread(app_server.url, workdir)
    await asyncio.to_thread(first_run, claude, workdir)
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "codexbridge", "mcp", "--role", "codex"],
        env={**os.environ, "CODEX_BRIDGE_URL": app_server.url}, cwd=str(workdir))
    async with Client(server, mode="legacy") as client:
        result = await client.call_tool("bridge_handoff", {
            "threadId": thread, "via": "mail", "decisions": "rejected the ORM (too slow)",
            "nextStep": "benchmark the raw queries"})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    data = result.structured_content["data"]
    assert data["state"] == "parked" and data["via"] == "mail" and not data["delivered"]
    (mail,) = reading.peek(inbox_dir(), "web").mails
    assert "rejected the ORM (too slow)" in mail.text and "benchmark the raw" in mail.text
    assert "CODEX-HUMAN-ONE" in mail.text and TOOL_OUTPUT not in mail.text
