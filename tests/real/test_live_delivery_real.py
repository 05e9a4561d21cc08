"""Live delivery into a running Claude Code 2.1.332 through its cross-session inbox.

The hooks are installed as `codexbridge install-hook` writes them (the SessionStart
registration records the session's inbox socket, pid and transcript); `inbox push` then
pushes the mail into the running session as one frame and confirms it from the
session's transcript. Every case where the session must not (or cannot) be pushed to
falls back to the Stop hook, which then delivers exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import peek as reading
from codexbridge.inbox.location import live_files
from codexbridge.messages.listeners import read_listeners
from codexbridge.setup.claude import install_hooks as install
from tests.support.claude_fixtures import ClaudeHarness, TmuxClaude
from tests.support.helpers import push_cli, wait_until
from tests.support.mock_claude import MockMessages, RecordedRequest
from tests.support.pause import pause_env

pytestmark = [pytest.mark.real_claude]

BOX = "live"


def _state() -> str:
    """What the inbox dir and the hook log hold (for a failure message)."""
    home = Path(os.environ["CODEX_BRIDGE_HOME"])
    log = home / "logs" / "inbox-hook.log"
    files = {p.name: p.read_text()[:2000] for p in Path(inbox_dir()).glob(f"{BOX}*")}
    return json.dumps(files, indent=1) + "\n" + (log.read_text()[-3000:] if log.exists()
                                                 else "(no hook log)")


def push(text: str, *extra: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """A peer's `inbox push --json` into BOX: its receipt."""
    done = push_cli(BOX, text, "--json", *extra, env=env)
    assert done.code == 0, done.err
    data: dict[str, Any] = json.loads(done.out)
    return data


def registered(with_socket: bool = True) -> dict[str, Any]:
    """The listener record once the session's SessionStart hook has written it."""
    def probe() -> dict[str, Any] | None:
        rec = read_listeners(inbox_dir()).get(BOX)
        if rec and (rec.get("messaging_socket") or not with_socket):
            return rec
        return None
    return wait_until(probe, 30, "the session to register its mailbox", _state)


def carrying(text: str, since: int) -> Callable[[RecordedRequest], bool]:
    """A model call after `since` whose newest user message carries `text`."""
    def match(r: RecordedRequest) -> bool:
        return r.index >= since and text in r.tail_text()
    return match


def pending() -> int:
    return len(reading.peek(inbox_dir(), BOX).mails)


def settled() -> bool | None:
    """No live delivery still in flight (a put-back record may linger, by design)."""
    for path in live_files(inbox_dir(), BOX):
        try:
            if json.loads(Path(path).read_text()).get("state") != "put-back":
                return None
        except (OSError, ValueError):
            return None
    return True


def holding(mock: MockMessages, marker: str) -> tuple[threading.Event, threading.Event]:
    """The mock model "thinks" about any request carrying `marker` until `release` is
    set: (thinking, release)."""
    thinking = threading.Event()
    release = threading.Event()

    def hold(req: RecordedRequest) -> None:
        if marker in req.tail_text():
            thinking.set()
            release.wait(30)

    mock.on_request = hold
    return thinking, release


@pytest.fixture
def interactive(claude: ClaudeHarness, claude_project: Path,
                tmux_claude: TmuxClaude) -> TmuxClaude:
    install(str(claude_project), BOX)
    claude.seed_interactive(claude_project)
    return tmux_claude


def start_idle(session: TmuxClaude, *args: str) -> dict[str, Any]:
    session.start("--permission-mode", "manual", "--allowedTools", "Bash", *args)
    assert session.wait_for_screen("❯", timeout=30), session.screen()
    return registered()


def test_an_idle_session_gets_the_mail_at_once_and_never_again(
        interactive: TmuxClaude, mock_messages: MockMessages) -> None:
    rec = start_idle(interactive)
    assert rec["messaging_socket"] and rec["claude_pid"] and rec["transcript_path"]
    # the drift guard: what live delivery relies on, as the pinned Claude Code writes it
    registry = Path(rec["config_dir"]) / "sessions" / f"{rec['claude_pid']}.json"
    # (measured: the status field is added about 0.5 s after the file first appears)
    def with_status() -> dict[str, Any] | None:
        try:
            data: dict[str, Any] = json.loads(registry.read_text())
        except (OSError, ValueError):  # being rewritten
            return None
        return data if "status" in data else None

    reg = wait_until(with_status, 10, "the registry's status", _state)
    assert reg["peerProtocol"] == 1 and reg["sessionId"] == rec["session_id"]
    assert reg["messagingSocketPath"] == rec["messaging_socket"]
    assert reg["status"] in ("idle", "busy")
    listed = subprocess.run([sys.executable, "-m", "codexbridge", "inbox", "list", "--json"],
                            capture_output=True, text=True, check=True)
    assert json.loads(listed.stdout)["mailboxes"][0]["reach"]["live"] is True
    before = len(mock_messages.requests)
    pushed = time.monotonic()
    receipt = push("LIVE ONE: please look at the failing test")
    request = mock_messages.wait_for(carrying("LIVE ONE", before), timeout=10)
    latency = time.monotonic() - pushed
    assert request is not None, interactive.screen()
    assert receipt["delivery"] == "live", receipt
    text = request.tail_text()
    assert "sent through Claude Code's cross-session inbox" in text
    assert "Do not answer it with SendMessage" in text
    assert receipt["id"] in text  # the mail id travels in the body
    # settled: nothing pending, nothing in flight, and the next stop delivers nothing
    wait_until(settled, 10, "the live record to settle", _state)
    assert pending() == 0
    interactive.type("and now something else")
    mock_messages.wait_for(carrying("and now something else", request.index), timeout=20)
    follow = mock_messages.wait_for(
        lambda r: r.index > request.index and "MOCK_REPLY" in r.all_text()
        and "and now something else" in r.tail_text(), timeout=20)
    assert follow is not None
    assert not any("LIVE ONE" in fb for fb in mock_messages.stop_feedback())
    print(f"idle push → model request: {latency:.3f} s")


def test_mid_turn_mail_lands_right_after_the_turn_and_inside_a_tool_call(
        claude: ClaudeHarness, claude_project: Path, tmux_claude: TmuxClaude,
        mock_messages: MockMessages) -> None:
    thinking, release = holding(mock_messages, "SLOW THOUGHT")
    install(str(claude_project), BOX)
    claude.seed_interactive(claude_project)
    start_idle(tmux_claude)
    # 1) the model is busy answering: the mail waits for the turn's end, then is a turn
    tmux_claude.type("SLOW THOUGHT about the design")
    assert thinking.wait(30)
    got: dict[str, Any] = {}
    pusher = threading.Thread(target=lambda: got.update(push("MIDTURN MAIL")))
    pusher.start()
    pusher.join(30)
    assert got["delivery"] == "live", got
    before = len(mock_messages.requests)
    release.set()
    after = mock_messages.wait_for(carrying("MIDTURN MAIL", before), timeout=20)
    assert after is not None, tmux_claude.screen()
    assert "SLOW THOUGHT" not in after.tail_text()  # its own turn, after the slow one
    # 2) during a tool call: inside the same turn, with the tool's result
    start = len(mock_messages.requests)
    tmux_claude.type('CALL_TOOL Bash {"command": "sleep 2", "description": "wait"}')
    mock_messages.wait_for(lambda r: r.index >= start and "sleep 2" in r.all_text(), 20)
    wait_until(lambda: _tool_started(tmux_claude), 20, "the Bash call to start", _state)
    receipt = push("TOOLTIME MAIL")
    assert receipt["delivery"] == "live", receipt
    # measured: it arrives with the tool's result, in the request that carries it
    inside = mock_messages.wait_for(
        lambda r: r.index >= start and "TOOLTIME MAIL" in r.all_text(), timeout=20)
    assert inside is not None
    assert "tool_result" in json.dumps(inside.body)
    assert not any("MIDTURN MAIL" in fb or "TOOLTIME MAIL" in fb
                   for fb in mock_messages.stop_feedback())
    assert pending() == 0


def _tool_started(session: TmuxClaude) -> bool:
    screen = session.screen()
    return "sleep 2" in screen and ("Running" in screen or "⎿" in screen)


def test_print_mode_gets_mail_that_arrives_mid_turn_before_it_exits(
        claude: ClaudeHarness, claude_project: Path, mock_messages: MockMessages) -> None:
    install(str(claude_project), BOX)
    thinking, release = holding(mock_messages, "PRINT MODE WORK")
    result: dict[str, Any] = {}
    runner = threading.Thread(target=lambda: result.update(
        proc=claude.run_p(claude_project, "PRINT MODE WORK")))
    runner.start()
    assert thinking.wait(30)
    registered()
    receipt = push("PRINT MAIL for the headless run")
    release.set()
    runner.join(60)
    assert result["proc"].returncode == 0, result["proc"].stderr
    assert receipt["delivery"] == "live", receipt
    assert mock_messages.requests_containing("PRINT MAIL for the headless run")
    assert not any("PRINT MAIL" in fb for fb in mock_messages.stop_feedback())
    assert pending() == 0


@pytest.mark.parametrize("policy", ["hold", "refuse"])
def test_the_users_policy_wins_and_the_stop_hook_delivers_once(
        claude: ClaudeHarness, claude_project: Path, mock_messages: MockMessages,
        policy: str) -> None:
    install(str(claude_project), BOX)
    settings = claude.config_dir / "settings.json"
    settings.write_text(json.dumps({"crossSessionInbound": policy}))
    thinking, release = holding(mock_messages, "POLICY WORK")
    result: dict[str, Any] = {}
    runner = threading.Thread(target=lambda: result.update(
        proc=claude.run_p(claude_project, "POLICY WORK")))
    runner.start()
    assert thinking.wait(30)
    registered()
    receipt = push("POLICY MAIL")
    release.set()
    runner.join(60)
    assert receipt["delivery"] == "next-stop"
    assert f'crossSessionInbound="{policy}"' in receipt["delivery_reason"]
    assert str(settings) in receipt["delivery_reason"]
    feedback = [fb for fb in mock_messages.stop_feedback() if "POLICY MAIL" in fb]
    assert len(feedback) == 1  # the Stop hook delivered it, once
    assert pending() == 0
    listed = subprocess.run([sys.executable, "-m", "codexbridge", "inbox", "list", "--json"],
                            capture_output=True, text=True, check=True)
    row = json.loads(listed.stdout)["mailboxes"][0]
    assert row["reach"]["live"] is False  # the session has exited
    assert result["proc"].returncode == 0


def test_a_session_gone_keeps_the_mail_for_the_next_stop(
        claude: ClaudeHarness, claude_project: Path, mock_messages: MockMessages) -> None:
    install(str(claude_project), BOX)
    proc = claude.run_p(claude_project, "just one turn")
    assert proc.returncode == 0
    receipt = push("AFTER EXIT MAIL")
    assert receipt["delivery"] == "next-stop"
    assert "not running" in receipt["delivery_reason"]
    assert pending() == 1
    again = claude.run_p(claude_project, "a new session")
    assert again.returncode == 0
    assert [fb for fb in mock_messages.stop_feedback() if "AFTER EXIT MAIL" in fb]
    assert pending() == 0


def test_twenty_mails_in_two_seconds_all_arrive_once(
        interactive: TmuxClaude, mock_messages: MockMessages) -> None:
    start_idle(interactive)
    before = len(mock_messages.requests)
    procs = [subprocess.Popen([sys.executable, "-m", "codexbridge", "inbox", "push", "--to",
                               BOX, "--json", f"BURST MAIL {i:02d}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(20)]
    receipts = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        receipts.append(json.loads(out))
    seen: dict[str, int] = {}

    def all_seen() -> bool | None:
        for r in mock_messages.model_calls[before:]:
            tail = r.tail_text()
            for i in range(20):
                if f"BURST MAIL {i:02d}" in tail:
                    seen.setdefault(f"{i:02d}", r.index)
        return True if len(seen) == 20 else None

    wait_until(all_seen, 60, "all twenty mails to reach the model", _state)
    wait_until(settled, 30, "the live records to settle", _state)
    assert pending() == 0
    deliveries = sorted((r["delivery"], r["delivery_reason"] or "") for r in receipts)
    counts = {f"{i:02d}": sum(1 for r in mock_messages.model_calls[before:]
                              if f"BURST MAIL {i:02d}" in r.tail_text()) for i in range(20)}
    # each exactly once — live, or by the Stop hook of a turn that ended between a
    # push's write and its take (either deliverer takes the mail; never both)
    assert set(counts.values()) == {1}, (counts, deliveries)
    assert {d for d, _ in deliveries} <= {"live", "taken"}, deliveries


@pytest.mark.parametrize("point", ["after_take", "after_send"])
def test_a_pusher_killed_between_take_and_confirm_delivers_exactly_once(
        interactive: TmuxClaude, mock_messages: MockMessages, point: str) -> None:
    start_idle(interactive)
    before = len(mock_messages.requests)
    env = pause_env(point, 30)
    proc = subprocess.Popen([sys.executable, "-m", "codexbridge", "inbox", "push", "--to",
                             BOX, "KILLED PUSHER MAIL"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()  # the store announces the pause
    assert point in line, line
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if point == "after_take":
        assert pending() == 1  # the taken batch is an orphan: still the mailbox's
        receipt = push("NEXT MAIL")  # recovers the orphan and delivers both, once
        assert receipt["delivery"] == "live", receipt
        got = mock_messages.wait_for(carrying("KILLED PUSHER MAIL", before), timeout=10)
        assert got is not None and "NEXT MAIL" in got.tail_text()
    else:
        # the frame was out: the session got it; the next push (or stop) settles the
        # record from the transcript, and nothing is delivered twice
        got = mock_messages.wait_for(carrying("KILLED PUSHER MAIL", before), timeout=10)
        assert got is not None
        receipt = push("NEXT MAIL")
        assert receipt["delivery"] == "live", receipt
        assert mock_messages.wait_for(carrying("NEXT MAIL", got.index), timeout=10)
    wait_until(settled, 10, "the live record to settle", _state)
    assert pending() == 0
    assert sum(1 for r in mock_messages.model_calls[before:]
               if "KILLED PUSHER MAIL" in r.tail_text()) == 1
    assert not any("KILLED PUSHER MAIL" in fb for fb in mock_messages.stop_feedback())


def test_live_off_by_switch(interactive: TmuxClaude, mock_messages: MockMessages) -> None:
    start_idle(interactive)
    receipt = push("SWITCHED OFF", env={"CODEX_BRIDGE_LIVE": "0"})
    assert receipt["delivery"] == "next-stop"
    assert "CODEX_BRIDGE_LIVE=0" in receipt["delivery_reason"]
    assert pending() == 1


@pytest.mark.real_codex
@pytest.mark.tmux
async def test_codexs_reply_goes_live_into_the_idle_session_that_asked(
        claude: ClaudeHarness, tmp_path: Path, mock_messages: MockMessages,
        app_server: Any, workdir: Path, mock_model: Any) -> None:
    """Claude's Bash runs `talk send`, Claude goes idle while Codex's turn is held; when
    Codex answers, the courier's reply mail goes straight into the session (no watcher,
    no stop needed)."""
    import asyncio

    from tests.real.test_conversation_claude_real import bash_call, receipt_in, talk_send
    from tests.support.raw_client import RawClient, start_user_thread

    project = tmp_path / "claude-project"
    project.mkdir()
    install(str(project), BOX)
    claude.seed_interactive(project)
    session = TmuxClaude(claude, project, env={"CODEX_BRIDGE_URL": app_server.url})
    try:
        async with RawClient(app_server.url) as tui:
            user = await start_user_thread(tui, workdir, "first message from the human")
            session.start("--permission-mode", "manual", "--allowedTools", "Bash")
            assert await asyncio.to_thread(session.wait_for_screen, "❯", 30)
            await asyncio.to_thread(registered)
            await asyncio.to_thread(session.type, bash_call(talk_send(
                user.thread_id, "HOLD:live-reply Claude here: which tests cover auth?")))
            seen = await asyncio.to_thread(mock_messages.wait_for,
                                           lambda r: receipt_in(r) is not None, 30)
            assert seen is not None, session.screen()
            receipt = receipt_in(seen)
            assert receipt is not None and receipt["reply_to"] == BOX
            await asyncio.to_thread(mock_model.wait_held, "live-reply", 30)
            before = len(mock_messages.requests)
            mock_model.release("live-reply")
            woke = await asyncio.to_thread(
                mock_messages.wait_for, carrying("Reply from Codex", before), 30)
            assert woke is not None, session.screen()
            assert "sent through Claude Code's cross-session inbox" in woke.tail_text()
            assert "MOCK REPLY: HOLD:live-reply Claude here: which tests cover auth?" in (
                woke.tail_text())
    finally:
        session.stop()
    assert not any("Reply from Codex" in fb for fb in mock_messages.stop_feedback())
    assert pending() == 0


def test_interrupt_cuts_the_running_turn_instead_of_waiting(
        claude: ClaudeHarness, claude_project: Path, tmux_claude: TmuxClaude,
        mock_messages: MockMessages) -> None:
    thinking, release = holding(mock_messages, "LONG THOUGHT")
    install(str(claude_project), BOX)
    claude.seed_interactive(claude_project)
    start_idle(tmux_claude)
    tmux_claude.type("LONG THOUGHT about everything")
    assert thinking.wait(30)
    before = len(mock_messages.requests)
    try:
        receipt = push("URGENT MAIL", "--interrupt")
        assert receipt["delivery"] == "live", receipt
        # the mail's request comes while the slow one is still held: the turn was cut
        urgent = mock_messages.wait_for(carrying("URGENT MAIL", before), timeout=10)
        assert urgent is not None and not release.is_set()
    finally:
        release.set()
