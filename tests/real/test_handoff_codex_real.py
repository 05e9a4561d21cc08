"""Handoff Claude Code → Codex on the real binaries: Claude Code 2.1.332 (`claude -p`,
the Stop hook installed by `install_hook.install`) against the mock Messages API, and a
real codex 0.169.0 app-server against the mock Responses API. A RawClient stands in for
the TUI; the real TUI itself is in the tmux test at the end.

Both mocks say a fixed sentence after a tool call instead of quoting its output, so
"tool output never crosses" is checked for real (tests/support/handoff_real.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from codexbridge.host.appserver import AppServerProcess as AppServer
from codexbridge.setup.claude import install_hooks as install
from tests.support.claude_fixtures import ClaudeHarness
from tests.support.handoff_fakes import hook_session
from tests.support.handoff_real import (
    CLAUDE_SAID_AFTER_TOOL,
    HANDOFF_LINE,
    handoff,
    injected_before_notice,
    quiet_claude,
    quiet_planner,
    state,
)
from tests.support.mock_claude import MockMessages
from tests.support.mock_codex import MockRequest, MockResponsesServer
from tests.support.raw_client import RawClient, start_turn, start_user_thread, wait_turn
from tests.support.tmux_tui import CodexTUI
from tests.support.transcripts import Transcript

pytestmark = pytest.mark.real_codex

# The command prints this, but its text does not contain it (the prompt carries the
# command, so only the output has the literal).
TOOL_COMMAND = "printf 'TOOL%sXYZ' -OUTPUT-"
TOOL_OUTPUT = "TOOL-OUTPUT-XYZ"


@pytest.fixture
def mock_model() -> Iterator[MockResponsesServer]:
    with MockResponsesServer(planner=quiet_planner) as mock:
        yield mock


def bash(command: str) -> str:
    return "CALL_TOOL Bash " + json.dumps({"command": command})


def notice_request(mock: MockResponsesServer, handoff_id: str,
                   timeout: float = 20) -> MockRequest:
    return mock.wait_for_request(
        lambda r: r.is_model_call and handoff_id in (r.user_text or ""), timeout)


@pytest.mark.real_claude
async def test_claudes_words_reach_codex_and_the_second_time_only_the_new_exchange(
        claude: ClaudeHarness, mock_messages: MockMessages, app_server: AppServer,
        mock_model: MockResponsesServer, workdir: Path) -> None:
    install(str(workdir), "web")
    mock_messages.responder = quiet_claude
    async with RawClient(app_server.url) as tui:
        user = await start_user_thread(tui, workdir, "the human starts in codex")
        first = await asyncio.to_thread(claude.run_p, workdir,
                                        f"CLAUDE-ONE check the build {bash(TOOL_COMMAND)}",
                                        "--allowedTools", "Bash")
        assert first.returncode == 0, first.stderr
        sid = claude.result_json(first)["session_id"]
        second = await asyncio.to_thread(claude.run_p, workdir, "CLAUDE-TWO and the docs",
                                         "--resume", sid)
        assert second.returncode == 0, second.stderr
        since = tui.mark()
        one = await handoff("--to", "codex", "--project", str(workdir), "--note",
                            "Decisions: keep the v1 API\nNext: port the CLI",
                            url=app_server.url)
        assert one["delivered"] and one["via"] == "inject" and one["messages"] == 4
        assert one["session"]["session_id"] == sid and one["threadId"] == user.thread_id
        req = await asyncio.to_thread(notice_request, mock_model, one["handoffId"])
        delta = injected_before_notice(req)
        for words in ("CLAUDE-ONE check the build", CLAUDE_SAID_AFTER_TOOL, "CLAUDE-TWO",
                      "MOCK_REPLY #3: CLAUDE-TWO and the docs", "keep the v1 API",
                      "port the CLI", one["full"]):
            assert words in delta, words
        assert TOOL_OUTPUT not in str(req.body)  # nowhere in what codex's model got
        # The TUI stand-in saw the visible turn, and Codex answered it.
        done = await tui.wait_for(lambda n: n.get("method") == "turn/completed", since=since)
        assert done["params"]["turn"]["status"] == "completed"
        notes = [n for n in tui.notifications[since:] if n.get("method") == "item/completed"]
        shown = [n["params"]["item"] for n in notes
                 if n["params"]["item"].get("type") == "userMessage"]
        assert len(shown) == 1 and shown[0]["clientId"] == one["handoffId"]
        assert re.match(rf"\[codexbridge [a-z0-9]{{6}}\] from Claude Code — {HANDOFF_LINE}",
                        shown[0]["content"][0]["text"])
        assert "CLAUDE-ONE" not in shown[0]["content"][0]["text"]  # the delta is not shown
        # … nor in the thread's history: a later handoff back never echoes it
        items = await tui.request("thread/items/list", {"threadId": user.thread_id,
                                                        "limit": 100})
        assert "CLAUDE-ONE" not in json.dumps(items) and one["handoffId"] in json.dumps(items)

        third = await asyncio.to_thread(claude.run_p, workdir, "CLAUDE-THREE one more thing",
                                        "--resume", sid)
        assert third.returncode == 0, third.stderr
        two = await handoff("--to", "codex", "--project", str(workdir), url=app_server.url)
        req2 = await asyncio.to_thread(notice_request, mock_model, two["handoffId"])
    new = injected_before_notice(req2)
    assert two["messages"] == 2 and "CLAUDE-THREE one more thing" in new
    assert "CLAUDE-ONE" not in new and "CLAUDE-TWO" not in new
    body = str(req2.body)
    assert body.count("CLAUDE-ONE check the build") == 1  # only the first delta has it
    mark = state(str(workdir))["knownBy"][f"codex:{user.thread_id}"][f"claude:{sid}"]
    assert mark == two["sources"][-1]["mark"]


async def test_a_handoff_killed_before_delivery_moves_no_watermark_and_is_sent_again(
        app_server: AppServer, mock_model: MockResponsesServer, workdir: Path,
        tmp_path: Path) -> None:
    t = Transcript(cwd=str(workdir))
    t.prompt("CLAUDE-KILLED please refactor")
    t.reply("Refactored the module")
    hook_session(str(workdir), t.write(tmp_path / "s.jsonl"))
    async with RawClient(app_server.url) as tui:
        user = await start_user_thread(tui, workdir, "human first")
        target = f"codex:{user.thread_id}"
        since = tui.mark()
        busy = await start_turn(tui, user.thread_id, "HOLD:busy a long human turn")
        await asyncio.to_thread(mock_model.wait_held, "busy")
        proc = subprocess.Popen(
            [sys.executable, "-m", "codexbridge", "handoff", "--to", "codex", "--project",
             str(workdir), "--json"], env={**os.environ, "CODEX_BRIDGE_URL": app_server.url},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 20
            while (state(str(workdir))["pending"].get(target) or {}).get("stage") != "sending":
                assert time.monotonic() < deadline and proc.poll() is None
                await asyncio.sleep(0.05)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        killed = state(str(workdir))
        assert killed["knownBy"] == {} and killed["pending"][target]["stage"] == "sending"
        mock_model.release("busy")
        await wait_turn(tui, user.thread_id, busy, since=since)
        again = await handoff("--to", "codex", "--project", str(workdir), url=app_server.url)
        req = await asyncio.to_thread(notice_request, mock_model, again["handoffId"])
    old = killed["pending"][target]["id"]
    assert again["settled"] == [f"{old}: interrupted before it reached the thread; its "
                                "material is in this handoff"]
    assert again["messages"] == 2 and "CLAUDE-KILLED please refactor" in \
        injected_before_notice(req)
    assert str(req.body).count("CLAUDE-KILLED") == 1  # the killed run sent nothing
    after = state(str(workdir))
    assert after["pending"] == {} and after["knownBy"][target] == {
        f"claude:{t.session}": t.last}
    assert [h["state"] for h in after["history"]] == [
        "interrupted before it reached the thread", "delivered"]


async def test_an_over_cap_delta_keeps_head_and_tail_and_names_the_companion(
        app_server: AppServer, mock_model: MockResponsesServer, workdir: Path,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = Transcript(cwd=str(workdir))
    for i in range(1, 41):
        t.prompt(f"ASK-{i:02d} " + "words " * 80)
        t.reply(f"ANSWER-{i:02d} " + "prose " * 80)
    hook_session(str(workdir), t.write(tmp_path / "s.jsonl"))
    monkeypatch.setenv("CODEX_BRIDGE_HANDOFF_MAX", "5000")
    async with RawClient(app_server.url) as tui:
        await start_user_thread(tui, workdir, "human first")
        out = await handoff("--to", "codex", "--project", str(workdir), url=app_server.url)
        req = await asyncio.to_thread(notice_request, mock_model, out["handoffId"])
    delta = injected_before_notice(req)
    assert len(delta) <= 5000 and out["chars"] == len(delta) and out["cutMessages"] > 30
    assert "ASK-01" in delta and "ANSWER-01" in delta  # the start
    assert "ASK-40" in delta and "ANSWER-40" in delta  # the latest exchange
    assert "ASK-20" not in delta and f"every one of them is in {out['full']}" in delta
    full = Path(out["full"]).read_text(encoding="utf-8")
    assert all(f"ASK-{i:02d}" in full and f"ANSWER-{i:02d}" in full for i in range(1, 41))
    assert os.stat(out["full"]).st_mode & 0o777 == 0o600


@pytest.mark.tmux
async def test_the_tui_shows_the_visible_turn_never_the_injected_delta(
        app_server: AppServer, tui_factory: Callable[[], CodexTUI],
        mock_model: MockResponsesServer, workdir: Path, tmp_path: Path) -> None:
    t = Transcript(cwd=str(workdir))
    t.prompt("ZEBRA-PROMPT from the claude session")
    t.reply("ZEBRA-ANSWER from claude")
    hook_session(str(workdir), t.write(tmp_path / "s.jsonl"))
    tui = tui_factory()
    tui.wait_ready()
    tui.send("hello from the human")
    await asyncio.to_thread(tui.wait_for_text, "MOCK REPLY: hello from the human", 30)
    out = await handoff("--to", "codex", "--project", str(workdir), url=app_server.url)
    screen = await asyncio.to_thread(tui.wait_for_text, HANDOFF_LINE, 30)
    req = await asyncio.to_thread(notice_request, mock_model, out["handoffId"])
    assert "ZEBRA-PROMPT" in injected_before_notice(req)  # the model got it …
    screen = await asyncio.to_thread(tui.wait_for_text, "MOCK REPLY: Handoff", 30)
    assert "ZEBRA" not in screen  # … the human's screen never shows it
    assert "ZEBRA" not in tui.capture(scrollback=True)
