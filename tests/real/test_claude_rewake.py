"""Waking an idle interactive Claude Code (2.1.332, in tmux) with the asyncRewake watcher.

Set up exactly as `codexbridge install-hook --rewake` writes it: the Stop hook plus the
watcher on SessionStart and Stop. Claude sits idle at its prompt; a push must start a
new turn within a few seconds whose model request carries the mail — twice in a row
(the first wake comes from the SessionStart watcher, the second from the watcher the
Stop hook re-armed). Teardown kills claude by pid first, then the tmux server, and
checks that no watcher outlives the session.

Live delivery is off in the session too (the switch that leaves the watcher the wake
alone): at its defaults the watcher takes the live road first, proven in
tests/real/test_conversation_claude_real.py (`…through_its_watcher…[live]`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from codexbridge.hooks.watcher import parse_claim
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import peek as reading
from codexbridge.inbox.location import watcher_path
from codexbridge.setup.claude import install_hooks as install
from tests.support.binaries import wait_flock_held
from tests.support.claude_fixtures import ClaudeHarness, TmuxClaude
from tests.support.helpers import push_cli, wait_until
from tests.support.mock_claude import MockMessages

pytestmark = [pytest.mark.real_claude, pytest.mark.tmux]

WAKE_BUDGET_S = 5.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _live_watcher(name: str, timeout: float) -> int:
    """Pid of the watcher holding the claim, once it exists and is alive."""
    path = Path(watcher_path(inbox_dir(), name))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            pid = parse_claim(path.read_bytes())
            if pid is not None and _alive(pid):
                return pid
        time.sleep(0.05)
    raise AssertionError(f"no watcher claimed mailbox {name!r} within {timeout}s")


def _push(to: str, text: str) -> None:
    """Live delivery off: this test is about the watcher's path."""
    done = push_cli(to, text, env={"CODEX_BRIDGE_LIVE": "0"})
    assert done.code == 0, done.err


@pytest.fixture
def tmux_claude(claude: ClaudeHarness, claude_project: Path) -> Iterator[TmuxClaude]:
    """An interactive claude in tmux with live delivery off; always torn down."""
    session = TmuxClaude(claude, claude_project, env={"CODEX_BRIDGE_LIVE": "0"})
    try:
        yield session
    finally:
        session.stop()


def test_push_wakes_an_idle_session(claude: ClaudeHarness, claude_project: Path,
                                    mock_messages: MockMessages,
                                    tmux_claude: TmuxClaude) -> None:
    install(str(claude_project), "tui", rewake=True, watch_timeout=120)
    claude.seed_interactive(claude_project)
    tmux_claude.start()
    assert tmux_claude.wait_for_screen("❯", timeout=30), tmux_claude.screen()
    watchers = []

    for n, text in enumerate(["WAKE MAIL ONE from codex", "WAKE MAIL TWO from codex"]):
        watchers.append(_live_watcher("tui", timeout=20))
        wait_flock_held(watcher_path(inbox_dir(), "tui"))  # it claimed, now it holds the lock
        before = len(mock_messages.requests)
        _push("tui", text)
        request = mock_messages.wait_for(
            lambda r, text=text, before=before: r.index >= before and text in r.tail_text(),
            timeout=WAKE_BUDGET_S)
        assert request is not None, (n, tmux_claude.screen())
        tail = request.tail_text()
        assert "Stop hook feedback" in tail and 'mailbox "tui"' in tail
        assert request.headers.get("user-agent", "").endswith("(external, cli)")  # the TUI
        # Exactly once: the mail is gone from the box and is in one wake only.
        assert reading.peek(inbox_dir(), "tui").mails == []
        assert tmux_claude.wait_for_screen("MOCK_REPLY", timeout=10)
        # Wait for the turn's Stop hook to re-arm a watcher before the next push (the loop
        # that stood here ran out silently when none came).
        wait_until(lambda: _live_watcher("tui", 10) != watchers[-1], 10,
                   "the Stop hook to re-arm a watcher", tmux_claude.screen)

    wakes = [r for r in mock_messages.model_calls if "WAKE MAIL" in r.tail_text()]
    assert len(wakes) == 2
    listener = json.loads(Path(inbox_dir(), "tui.session.json").read_text())
    assert listener["session_id"] == wakes[0].session_id

    tmux_claude.stop()
    wait_until(lambda: not any(_alive(p) for p in watchers), 10,
               "every watcher to end with claude")
