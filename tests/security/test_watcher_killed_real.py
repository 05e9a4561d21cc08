"""A watcher killed while it wakes Claude loses no mail (real Claude Code 2.1.332, tmux).

Threat: the asyncRewake watcher (`inbox watch`) is killed — by the user, the OOM killer,
a session ending — between taking the mail and exiting 2. A killed asyncRewake hook
wakes nothing (measured: Claude Code takes a wake only from an exit 2), yet the watcher
used to mark the mail delivered before it exited: killed in that window, the mail was
gone for good. Now what it took waits in an in-flight record until the session's
transcript shows the wake; a watcher killed at any of its steps leaves the mail to the
next watcher or stop, which delivers it exactly once.

Each case: an interactive claude in tmux with the plugin's hooks (Stop hook + watcher on
SessionStart and Stop) and live delivery off (the switch that leaves the wake to the
watcher; the live road's own kill test is tests/real/test_live_delivery_real.py). The
first watcher stops at the step and is SIGKILLed there; the human then types a prompt,
which makes the next stop (and the next watcher).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import peek as reading
from codexbridge.inbox import store
from codexbridge.inbox.location import has_live, taken_files, watcher_path
from codexbridge.setup.claude import install_hooks as install
from tests.real.test_claude_rewake import _live_watcher, _push
from tests.support.binaries import wait_flock_held
from tests.support.claude_fixtures import ClaudeHarness, TmuxClaude
from tests.support.mock_claude import MockMessages
from tests.support.pause import ONCE_ENV, ONLY_ENV, PAUSE_ENV, pause_env, paused_pid

pytestmark = [pytest.mark.real_claude, pytest.mark.tmux]

# The watcher's steps: the mail taken (renamed away); moved into its in-flight record
# (the taken file gone); its text written to stderr, the exit still to come.
STEPS = ("after_take", "before_wake", "after_wake")
MARK = "KILLED-WATCHER MAIL"
# The next watcher puts a dead watcher's wake back after live.WAKE_GRACE_S, then wakes.
DELIVERY_BUDGET_S = 60.0


@pytest.fixture
def paused_claude(request: pytest.FixtureRequest, claude: ClaudeHarness,
                  claude_project: Path, tmp_path: Path) -> Iterator[tuple[TmuxClaude, Path]]:
    once = tmp_path / "paused.pid"
    env = pause_env(request.param, 600, {}, once=once, only="watch")
    session = TmuxClaude(claude, claude_project, env={
        "CODEX_BRIDGE_LIVE": "0", "PYTHONPATH": env["PYTHONPATH"],
        PAUSE_ENV: env[PAUSE_ENV], ONCE_ENV: env[ONCE_ENV], ONLY_ENV: env[ONLY_ENV]})
    try:
        yield session, once
    finally:
        session.stop()


def _settled(name: str) -> bool:
    """Nothing of the mailbox left anywhere: no mail, no batch, no wake in flight."""
    inbox = inbox_dir()
    return (not reading.peek(inbox, name).mails and not taken_files(inbox, name)
            and not has_live(inbox, name))


@pytest.mark.parametrize("paused_claude", STEPS, indirect=True)
def test_a_watcher_killed_at_each_step_leaves_the_mail_delivered_once(
        claude: ClaudeHarness, claude_project: Path, mock_messages: MockMessages,
        paused_claude: tuple[TmuxClaude, Path]) -> None:
    tmux, once = paused_claude
    install(str(claude_project), "tui", rewake=True, watch_timeout=120)
    claude.seed_interactive(claude_project)
    tmux.start()
    assert tmux.wait_for_screen("❯", timeout=30), tmux.screen()
    _live_watcher("tui", timeout=20)
    wait_flock_held(watcher_path(inbox_dir(), "tui"))

    _push("tui", MARK)
    pid = paused_pid(once, timeout=20)
    os.kill(pid, signal.SIGKILL)

    tmux.type("anything new?")  # the human's next prompt: its stop, then a new watcher
    got = mock_messages.wait_for(lambda r: MARK in r.tail_text(), timeout=DELIVERY_BUDGET_S)
    assert got is not None, tmux.screen()
    # The turn that took it in settles it: nothing left that could deliver it again.
    _wait_settled("tui", tmux)
    delivered = [r for r in mock_messages.model_calls if MARK in r.tail_text()]
    assert len(delivered) == 1, [r.tail_text()[:200] for r in delivered]
    mail_id = _only_id(delivered[0].tail_text())
    assert mail_id in store.delivered_ids(inbox_dir(), "tui")


def _wait_settled(name: str, tmux: TmuxClaude) -> None:
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if _settled(name):
            return
        time.sleep(0.1)
    raise AssertionError(f"mailbox {name!r} still holds mail or a wake: {tmux.screen()}")


def _only_id(text: str) -> str:
    marks = [part.split(maxsplit=1)[0] for part in text.split(" · id ")[1:]]
    assert len(marks) == 1, text
    return marks[0]
