"""Handoff to a stopped Claude session set up the README way — `codexbridge setup claude`,
whose plugin brings the SessionStart and Stop hooks (issue 16, point 6): the resume road
is taken, install-hook is never suggested, and every front end (the Outcome, --json, CLI
text, the MCP tool) says where the delta really is and what brings it in.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from codexbridge.cli.handoff_cmd import _say
from codexbridge.codex.client import AppServerClient
from codexbridge.handoff import flow, resume
from codexbridge.handoff.claude_source import plugin_enabled
from codexbridge.handoff.note import parse_note
from codexbridge.handoff.to_claude import handoff_to_claude
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import peek as reading
from codexbridge.mcp.bridge_tools import handoff_outcome
from codexbridge.messages.records import DeliveryState
from tests.support import payloads
from tests.support.cli import run_cli
from tests.support.handoff_fakes import Server, codex_items, hook_session
from tests.support.schema_guard import (
    SchemaGuard,
    schema_guard_fixture,  # noqa: F401
)
from tests.support.transcripts import SESSION

NOTE = parse_note("Decisions: use X. Next: write the tests")


@pytest.fixture
def project(tmp_path: Path) -> str:
    path = tmp_path / "project"
    path.mkdir()
    return str(path)


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The user's Claude config dir; the hook records it in the listener record."""
    path = tmp_path / "claude-config"
    path.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(path))
    return str(path)


@pytest.fixture
def server(project: str, schema_guard: SchemaGuard) -> Server:
    server = Server(threads=[payloads.thread(cwd=project)], page_size=50)
    server.items = codex_items()
    return server


@asynccontextmanager
async def client(server: Server) -> AsyncIterator[AppServerClient]:
    async with AppServerClient("ws://memory", connector=server.connector) as c:
        yield c


def setup_claude(args: list[str], config_dir: str) -> None:
    res = run_cli("setup", "claude", *args, env={"CLAUDE_CONFIG_DIR": config_dir})
    assert res.code == 0, res.err


@pytest.mark.parametrize("scope", ["project", "user"])
async def test_a_stopped_session_under_the_plugin_waits_for_its_resume(
        project: str, config_dir: str, server: Server, tmp_path: Path, scope: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    setup_claude(["--project", project] if scope == "project" else ["--user"], config_dir)
    assert plugin_enabled(project, config_dir)
    hook_session(project, tmp_path / "c.jsonl")  # registered, then stopped
    async with client(server) as c:
        out = await handoff_to_claude(c, project=project, note=NOTE, env={})
    assert out.via == "resume" and not out.delivered
    assert out.state == flow.Waiting.FOR_RESUME
    assert out.action == f"cd {project} && claude --resume {SESSION}"
    said = " ".join(out.warnings)
    assert "install-hook" not in said and "SessionStart hook" not in said
    assert resume.read_pending(SESSION) is not None  # the plugin's hook takes it on resume
    assert reading.peek(inbox_dir(), "web").mails == []  # nothing parked as mail
    data = out.as_dict()
    assert data["state"] == "waiting-for-resume" and data["delivered"] is False
    assert data["action"] == out.action
    _say(out)
    printed = capsys.readouterr()
    assert "waiting for the session to resume" in printed.out
    assert f"claude --resume {SESSION}" in printed.out and "delivered" not in printed.out
    assert "install-hook" not in printed.out + printed.err
    mcp = handoff_outcome(out, False)
    assert "waiting for the session to resume" in mcp.summary
    assert f"claude --resume {SESSION}" in mcp.summary


async def test_without_the_plugin_or_a_hook_it_parks_as_mail_and_says_so(
        project: str, config_dir: str, server: Server, tmp_path: Path) -> None:
    hook_session(project, tmp_path / "c.jsonl")
    async with client(server) as c:
        out = await handoff_to_claude(c, project=project, note=NOTE, env={})
    assert out.via == "mail" and not out.delivered and out.state == flow.Waiting.PARKED
    assert out.action == f"cd {project} && claude --resume {SESSION}"
    assert f"setup claude --project {project}" in out.warnings[0]
    assert "install-hook" not in out.warnings[0]
    assert "parked in the mailbox" in out.state_text()


async def test_a_running_session_not_reachable_live_is_queued_not_delivered(
        project: str, config_dir: str, server: Server, tmp_path: Path) -> None:
    hook_session(project, tmp_path / "c.jsonl", pid=os.getpid())  # no inbox socket
    async with client(server) as c:
        out = await handoff_to_claude(c, project=project, note=NOTE, env={})
    assert out.via == "mail" and not out.delivered and out.state == DeliveryState.QUEUED
    assert out.action is None and len(reading.peek(inbox_dir(), "web").mails) == 1


async def test_no_session_yet_points_at_setup_or_at_starting_claude(
        project: str, config_dir: str, server: Server) -> None:
    from codexbridge.errors import NoSessionError

    async with client(server) as c:
        with pytest.raises(NoSessionError) as before:
            await handoff_to_claude(c, project=project, note=NOTE, env={})
        setup_claude(["--project", project], config_dir)
        with pytest.raises(NoSessionError) as after:
            await handoff_to_claude(c, project=project, note=NOTE, env={})
    assert f"codexbridge setup claude --project {project}" in before.value.message
    assert "the codexbridge plugin registers the session" in after.value.message
    assert "install-hook" not in before.value.message + after.value.message
