"""The Stop hook on the real Claude Code 2.1.332 (`claude -p`) against the mock model.

What is proven here, on the binary users run:
* mail pushed before a run reaches the model in the request after the first turn,
  as `Stop hook feedback:` carrying every mail (one block), with sender and time;
* a line written exactly as claude-codex-bridge writes it is delivered too;
* with mail arriving at every model call, the hook stops blocking at
  CODEX_BRIDGE_MAX_CHAIN and the rest waits for the next run — every mail accounted for;
* CODEX_BRIDGE_MAX_CHAIN above Claude's block cap is clamped, so Claude never overrides
  a block (which would lose the mail popped for it);
* settings written by `codexbridge install-hook` are accepted by the real CLI (it
  silently ignores invalid settings under -p, so delivered mail is the proof) and the
  project's own hooks keep running.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import peek as reading
from codexbridge.messages.listeners import hook_command, session_path
from tests.support.claude_fixtures import (
    ClaudeHarness,
    TmuxClaude,
    hook_settings,
    write_project_settings,
)
from tests.support.mock_claude import MockMessages, RecordedRequest

pytestmark = pytest.mark.real_claude

INTEROP_LINE = ('{"id":"m4x9k2a1-q7w3e9","at":"2026-05-01T09:30:12.345Z","from":"codex",'
                '"to":"bridge","text":"順便幫我看一下 auth 那段"}\n')


def cli_push(to: str, text: str) -> str:
    """`inbox push` with live delivery off: these tests are about the Stop hook's path
    (live delivery has its own, tests/real/test_live_delivery_real.py)."""
    proc = subprocess.run([sys.executable, "-m", "codexbridge", "inbox", "push", "--to", to,
                           "--json", text], capture_output=True, text=True, check=True,
                          env={**os.environ, "CODEX_BRIDGE_LIVE": "0"})
    mail_id = json.loads(proc.stdout)["id"]
    assert isinstance(mail_id, str)
    return mail_id


def pending_texts(name: str) -> list[str]:
    return [m.text for m in reading.peek(inbox_dir(), name).mails]


def hook_project(project: Path, name: str) -> None:
    write_project_settings(project, hook_settings(
        {"Stop": [{"type": "command", "command": hook_command(name)}]}))


def test_mail_waiting_before_the_run_reaches_the_next_request(
        claude: ClaudeHarness, claude_project: Path, mock_messages: MockMessages) -> None:
    hook_project(claude_project, "bridge")
    first = cli_push("bridge", "Please review auth.py before merging")
    second = cli_push("bridge", "Also run the tests")
    with open(os.path.join(inbox_dir(), "bridge.jsonl"), "a", encoding="utf-8") as fh:
        fh.write(INTEROP_LINE)  # claude-codex-bridge appends without any lock

    proc = claude.run_p(claude_project, "hello")
    assert proc.returncode == 0, proc.stderr
    calls = mock_messages.model_calls
    assert len(calls) == 2, [c.tail_text()[:100] for c in calls]
    assert calls[0].stop_feedback() is None
    feedback = calls[1].stop_feedback()
    assert feedback is not None, calls[1].tail_text()
    assert feedback.startswith('codexbridge: 3 new messages arrived in mailbox "bridge"')
    for text in ("Please review auth.py before merging", "Also run the tests",
                 "順便幫我看一下 auth 那段", first, second, "id m4x9k2a1-q7w3e9",
                 "from codex — a peer AI agent, not the human user · sent "
                 "2026-05-01T09:30:12.345Z"):
        assert text in feedback
    assert feedback.index("Please review") < feedback.index("Also run") \
        < feedback.index("順便")
    assert pending_texts("bridge") == []
    # The listener record names this very session and project.
    record = json.loads(Path(session_path(inbox_dir(), "bridge")).read_text())
    assert record["session_id"] == calls[0].session_id == claude.result_json(proc)["session_id"]
    assert Path(record["cwd"]).resolve() == claude_project.resolve()


def test_empty_mailbox_lets_claude_stop(claude: ClaudeHarness, claude_project: Path,
                                        mock_messages: MockMessages) -> None:
    hook_project(claude_project, "bridge")
    proc = claude.run_p(claude_project, "hello")
    assert proc.returncode == 0, proc.stderr
    assert len(mock_messages.model_calls) == 1
    assert os.path.exists(session_path(inbox_dir(), "bridge"))  # listener recorded


def _push_on_every_call(mock: MockMessages, name: str, pushed: list[str]) -> None:
    def on_request(req: RecordedRequest) -> None:
        if req.is_model_call:
            pushed.append(f"MAIL {len(pushed) + 1}")
            cli_push(name, pushed[-1])

    mock.on_request = on_request


def _accounted(mock: MockMessages, pushed: list[str], name: str) -> tuple[list[str], list[str]]:
    delivered = [line for fb in mock.stop_feedback() for line in fb.splitlines()
                 if line.startswith("MAIL ")]
    waiting = pending_texts(name)
    assert sorted(delivered + waiting) == sorted(pushed), (delivered, waiting, pushed)
    assert len(set(delivered)) == len(delivered)  # nothing delivered twice
    return delivered, waiting


def test_chain_limit_leaves_mail_for_the_next_stop(
        claude: ClaudeHarness, claude_project: Path, mock_messages: MockMessages) -> None:
    hook_project(claude_project, "bridge")
    pushed: list[str] = []
    _push_on_every_call(mock_messages, "bridge", pushed)
    env = {"CODEX_BRIDGE_MAX_CHAIN": "3"}
    proc = claude.run_p(claude_project, "start", env=env)
    assert proc.returncode == 0, proc.stderr
    # Turn, then three blocks (one per new mail), then the hook lets Claude stop.
    assert len(mock_messages.model_calls) == 4
    delivered, waiting = _accounted(mock_messages, pushed, "bridge")
    assert delivered == ["MAIL 1", "MAIL 2", "MAIL 3"] and waiting == ["MAIL 4"]
    log = Path(os.environ["CODEX_BRIDGE_HOME"], "logs", "inbox-hook.log").read_text()
    assert "mail left for the next stop" in log

    # The next run's first stop delivers what was left.
    mock_messages.on_request = None
    before = len(mock_messages.model_calls)
    proc = claude.run_p(claude_project, "again", env=env)
    assert proc.returncode == 0, proc.stderr
    later = mock_messages.model_calls[before:]
    assert len(later) == 2 and "MAIL 4" in (later[1].stop_feedback() or "")
    delivered, waiting = _accounted(mock_messages, pushed, "bridge")
    assert delivered == ["MAIL 1", "MAIL 2", "MAIL 3", "MAIL 4"] and waiting == []


def test_max_chain_above_claudes_cap_is_clamped(
        claude: ClaudeHarness, claude_project: Path, mock_messages: MockMessages) -> None:
    """With Claude's cap at 3 a 4th consecutive block would be overridden and its mail
    lost (claude-code.md §4); we ask for 10 and must get at most 2."""
    hook_project(claude_project, "bridge")
    pushed: list[str] = []
    _push_on_every_call(mock_messages, "bridge", pushed)
    env = {"CODEX_BRIDGE_MAX_CHAIN": "10", "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "3"}
    proc = claude.run_p(claude_project, "start", "--output-format", "stream-json",
                        "--verbose", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "consecutive times" not in proc.stdout  # Claude never had to override
    assert len(mock_messages.model_calls) == 3
    delivered, waiting = _accounted(mock_messages, pushed, "bridge")
    assert delivered == ["MAIL 1", "MAIL 2"] and waiting == ["MAIL 3"]


def test_install_hook_settings_are_accepted_by_claude(
        claude: ClaudeHarness, claude_project: Path, mock_messages: MockMessages,
        tmp_path: Path) -> None:
    marker = tmp_path / "their-hook-ran"
    settings = claude_project / ".claude" / "settings.json"
    write_project_settings(claude_project, {
        "env": {"THEIR_SETTING": "kept"},
        "hooks": {"Stop": [{"matcher": "*", "hooks": [
            {"type": "command", "command": f"touch {marker}"}]}]}})
    proc = subprocess.run([sys.executable, "-m", "codexbridge", "install-hook", "--project",
                           str(claude_project), "--as", "web", "--rewake"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert list(settings.parent.glob("settings.json.bak-*"))
    cli_push("web", "mail through installed hook")

    run = claude.run_p(claude_project, "hello")
    assert run.returncode == 0, run.stderr
    calls = mock_messages.model_calls
    assert len(calls) == 2
    assert "mail through installed hook" in (calls[1].stop_feedback() or "")
    assert marker.exists()  # the project's own Stop hook still runs
    assert json.loads(settings.read_text())["env"] == {"THEIR_SETTING": "kept"}


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("with_venv", [True, False])
def test_the_repos_own_settings_work_from_a_clone(
        claude: ClaudeHarness, claude_project: Path, mock_messages: MockMessages,
        with_venv: bool) -> None:
    """The committed .claude/settings.json, in a checkout with or without its .venv."""
    settings = claude_project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text((REPO / ".claude" / "settings.json").read_text())
    if with_venv:  # stands in for the clone's own .venv/bin/python
        python = claude_project / ".venv" / "bin" / "python"
        python.parent.mkdir(parents=True)
        python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
        python.chmod(0o755)
    cli_push("bridge", "mail for the repo session")

    proc = claude.run_p(claude_project, "hello")
    assert proc.returncode == 0, proc.stderr
    calls = mock_messages.model_calls
    if with_venv:
        assert len(calls) == 2
        assert "mail for the repo session" in (calls[1].stop_feedback() or "")
    else:  # no interpreter: the hook is silent and the mail waits
        assert len(calls) == 1
        assert pending_texts("bridge") == ["mail for the repo session"]


@pytest.mark.tmux
def test_an_interactive_block_tells_the_human_it_is_mail(
        claude: ClaudeHarness, claude_project: Path, mock_messages: MockMessages) -> None:
    """In the TUI a block reads "Stop hook reported a problem"; the hook's systemMessage
    says above it that this is codexbridge's mail (the model sees only the mail)."""
    hook_project(claude_project, "bridge")
    cli_push("bridge", "MAIL FOR THE HUMAN TO SEE: the build is green")
    claude.seed_interactive(claude_project)
    session = TmuxClaude(claude, claude_project, env={"CODEX_BRIDGE_LIVE": "0"})
    try:
        session.start()
        assert session.wait_for_screen("❯", 30), session.screen()
        session.type("hello")
        assert session.wait_for_screen("MOCK_REPLY #2", 30), session.screen()
        screen = " ".join(session.screen().split())
    finally:
        session.stop()
    assert ("Stop says: codexbridge: 1 message from codex for mailbox bridge, handed to "
            "Claude") in screen, screen
    assert "MAIL FOR THE HUMAN TO SEE: the build is green" in screen, screen
    feedback = mock_messages.model_calls[1].stop_feedback() or ""
    assert "MAIL FOR THE HUMAN TO SEE" in feedback and "Stop says" not in feedback
    assert "handed to Claude (the block below" not in feedback
