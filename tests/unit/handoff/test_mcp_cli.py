"""`bridge_handoff` on both MCP roles (SDK in-memory transport, the scripted
app-server) and the `codexbridge handoff` command's arguments, output and exit codes."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from codexbridge.codex.client import AppServerClient
from codexbridge.codex.endpoint import Endpoint
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import peek as reading
from codexbridge.mcp.artifacts import ArtifactStore
from codexbridge.mcp.runtime import Runtime
from codexbridge.mcp.server import build_server
from codexbridge.mcp.settings import load
from tests.support import payloads
from tests.support.cli import run_cli
from tests.support.handoff_fakes import Server, claude_work, codex_items, hook_session
from tests.support.schema_guard import (
    SchemaGuard,
    schema_guard_fixture,  # noqa: F401
)

THREAD = payloads.USER_THREAD


@pytest.fixture
def project(tmp_path: Path) -> str:
    path = tmp_path / "project"
    path.mkdir()
    return str(path)


@pytest.fixture
def server(project: str, schema_guard: SchemaGuard) -> Server:
    return Server(threads=[payloads.thread(cwd=project)], page_size=50)


def runtime(tmp_path: Path, role: str, server: Server) -> Runtime:
    @asynccontextmanager
    async def connect() -> AsyncIterator[AppServerClient]:
        async with AppServerClient("ws://memory", connector=server.connector) as c:
            yield c

    s = dataclasses.replace(load(role, {}), queue_wait=5.0)  # type: ignore[arg-type]
    return Runtime(settings=s, store=ArtifactStore(tmp_path / "art", role, ttl=60,
                                                   max_bytes=1 << 20),
                   connect=connect, endpoint=lambda: Endpoint("ws://memory", None, "test"),
                   inbox=inbox_dir)


async def call(rt: Runtime, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    async with Client(build_server(rt.settings, rt), mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "bridge_handoff" in tools
        result = await client.call_tool("bridge_handoff", args)
    sc = result.structured_content
    assert isinstance(sc, dict)
    text = " ".join(getattr(b, "text", "") for b in result.content)
    return sc, text


async def test_the_tool_on_each_role(tmp_path: Path, server: Server) -> None:
    for role, extra in (("claude", {"threadId", "fromSession"}),
                        ("codex", {"mailbox", "threadId", "via"})):
        rt = runtime(tmp_path, role, server)
        async with Client(build_server(rt.settings, rt), mode="legacy") as client:
            tool = {t.name: t for t in (await client.list_tools()).tools}["bridge_handoff"]
        assert set(tool.input_schema["properties"]) == {"note", "decisions", "nextStep",
                                                        "project", "dryRun", *extra}
        assert tool.annotations is not None and tool.annotations.read_only_hint is False


async def test_codex_hands_to_claude_writing_its_own_note(tmp_path: Path, project: str,
                                                          server: Server) -> None:
    hook_session(project, tmp_path / "c.jsonl", pid=os.getpid())
    server.items = codex_items()
    sc, text = await call(runtime(tmp_path, "codex", server), {
        "project": project, "threadId": THREAD, "decisions": "kept the v1 API",
        "nextStep": "port the CLI"})
    data = sc["data"]
    assert sc["ok"] and data["via"] == "mail" and data["state"] == "queued"
    assert not data["delivered"] and "queued in the running session's mailbox" in text
    assert data["full"] in text
    (mail,) = reading.peek(inbox_dir(), "web").mails
    assert "kept the v1 API" in mail.text and "port the CLI" in mail.text
    assert "codex did it" in mail.text


async def test_claude_dry_run_returns_the_delta(tmp_path: Path, project: str,
                                                server: Server) -> None:
    hook_session(project, claude_work(tmp_path).write(tmp_path / "s.jsonl"))
    sc, _ = await call(runtime(tmp_path, "claude", server),
                       {"project": project, "dryRun": True, "note": "Next: ship"})
    assert sc["ok"] and sc["data"]["dryRun"] and "ship" in sc["data"]["delta"]
    assert server.requests("thread/inject_items") == []
    sc, _ = await call(runtime(tmp_path, "claude", server),
                       {"project": project, "fromSession": "nope"})
    assert sc["ok"] is False and sc["error"]["code"] == "NO_CLAUDE_SESSION"


def test_cli_arguments_and_exit_codes(project: str) -> None:
    res = run_cli("handoff", "--project", project, "--json")
    assert res.code == 2 and "--to codex" in res.err
    assert json.loads(res.out)["error"]["code"] == "INVALID_ARGUMENT"
    res = run_cli("handoff", "--to", "codex", "--as", "web", "--project", project)
    assert res.code == 2 and "--to claude" in res.err
    res = run_cli("handoff", "--to", "claude", "--from-session", "x", "--project", project)
    assert res.code == 2
    res = run_cli("handoff", "--to", "codex", "--project", project, "--url",
                  "ws://127.0.0.1:9", "--json")
    assert res.code == 5  # nothing listens there
    res = run_cli("handoff", "--help")
    assert "Exit codes:" in res.out and "no Claude Code session" in res.out


def test_cli_status_on_a_fresh_and_a_damaged_ledger(project: str) -> None:
    res = run_cli("handoff", "status", "--project", project)
    assert res.code == 0 and "no handoff yet" in res.out
    data = json.loads(run_cli("handoff", "status", "--project", project, "--json").out)
    assert data["ok"] and data["targets"] == [] and data["stateFile"].endswith(".json")
    Path(data["stateFile"]).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    Path(data["stateFile"]).write_text('{"version": 99}')
    res = run_cli("handoff", "status", "--project", project, "--json")
    assert res.code == 2 and json.loads(res.out)["error"]["code"] == "HANDOFF_STATE"
