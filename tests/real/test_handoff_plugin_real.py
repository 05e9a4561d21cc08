"""Handoff set up the README way, on the real binaries (issue 16, points 5–7).

`codexbridge setup claude --project P` enables the plugin (its SessionStart and Stop
hooks, the watcher); Claude Code 2.1.332 runs against the mock Messages API, codex
0.169.0's app-server against the mock Responses API; every default on (live delivery).

    stopped   a session that ran once and stopped: the handoff waits for its resume
              (never "delivered", never install-hook), README's one-line note keeps its
              Next, and `claude -p --resume` gets the delta from the plugin's hook
    mail      an interactive session (tmux) woken by the watcher, pushed to live, and
              sent Codex's reply as mail: none of it crosses to Codex as "[the human]",
              and the reply it got is not handed back to it
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from codexbridge.host.appserver import AppServerProcess as AppServer
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox.location import watcher_path
from codexbridge.messages.listeners import read_listeners
from codexbridge.messages.records import DeliveryStore
from codexbridge.setup.mailbox import project_mailbox
from tests.support.binaries import wait_flock_held
from tests.support.claude_fixtures import ClaudeHarness, TmuxClaude
from tests.support.cli import arun_cli, run_cli
from tests.support.handoff_real import state
from tests.support.helpers import push_cli, wait_until
from tests.support.mock_claude import MockMessages, RecordedRequest
from tests.support.raw_client import RawClient, start_user_thread

pytestmark = [pytest.mark.real_codex, pytest.mark.real_claude]

README_NOTE = "Decisions: use X. Next: write the tests"
ADDED = "SessionStart hook additional context"


def setup_plugin(claude: ClaudeHarness, project: Path) -> str:
    """`codexbridge setup claude --project P`; the project's mailbox name."""
    res = run_cli("setup", "claude", "--project", str(project),
                  env={"CLAUDE_CONFIG_DIR": str(claude.config_dir)})
    assert res.code == 0, res.err
    return project_mailbox(os.path.realpath(project))


async def handoff(url: str, *args: str) -> tuple[str, str]:
    res = await arun_cli("handoff", *args, env={"CODEX_BRIDGE_URL": url}, timeout=120)
    assert res.code == 0, (res.code, res.out, res.err)
    return res.out, res.err


@asynccontextmanager
async def codex_tui(url: str, workdir: Path) -> AsyncIterator[str]:
    """A user thread, held open the way the TUI holds it."""
    async with RawClient(url) as tui:
        user = await start_user_thread(tui, workdir, "CODEX-HUMAN-ONE plan the migration")
        yield user.thread_id


async def test_a_stopped_session_under_the_plugin_gets_it_on_resume(
        claude: ClaudeHarness, mock_messages: MockMessages, app_server: AppServer,
        workdir: Path) -> None:
    box = setup_plugin(claude, workdir)
    async with codex_tui(app_server.url, workdir):
        proc = await asyncio.to_thread(claude.run_p, workdir, "hello from the human")
        assert proc.returncode == 0, proc.stderr
        sid = str(claude.result_json(proc)["session_id"])
        assert read_listeners(inbox_dir())[box]["session_id"] == sid  # the plugin's hook
        out, err = await handoff(app_server.url, "--to", "claude", "--project", str(workdir),
                                 "--note", "Next: a first note", "--json")
        data = json.loads(out)
        assert data["via"] == "resume" and data["delivered"] is False
        assert data["state"] == "waiting-for-resume"
        assert data["action"].endswith(f"&& claude --resume {sid}")
        assert "install-hook" not in out + err
        # again, as a person reads it: the earlier one is taken back, this one waits
        out, err = await handoff(app_server.url, "--to", "claude", "--project", str(workdir),
                                 "--note", README_NOTE)
    assert "waiting for the session to resume" in out and f"claude --resume {sid}" in out
    assert ": delivered" not in out and "install-hook" not in out + err
    assert "superseded" in err
    pending = state(str(workdir))["pending"][f"claude:{sid}"]
    assert pending["via"] == "resume"

    before = len(mock_messages.model_calls)
    proc = await asyncio.to_thread(claude.run_p, workdir, "RESUME-ONE", "--resume", sid)
    assert proc.returncode == 0, proc.stderr
    text = mock_messages.model_calls[before].all_text()
    assert f"{ADDED}: [handoff {pending['id']} through codexbridge" in text
    assert "CODEX-HUMAN-ONE plan the migration" in text
    assert "== Decisions ==\nuse X." in text and "== Next ==\nwrite the tests" in text
    after = state(str(workdir))
    assert after["pending"] == {} and after["history"][-1]["by"] == "the SessionStart hook"


def seen(mock: MockMessages, needle: str, since: int) -> RecordedRequest:
    req = mock.wait_for(lambda r: r.index >= since and needle in r.all_text(), timeout=30)
    assert req is not None, f"no model request carried {needle!r}"
    return req


def registered(box: str) -> dict[str, Any] | None:
    rec = read_listeners(inbox_dir()).get(box)
    return rec if rec and rec.get("messaging_socket") else None


def reply_mail(delivery_id: str) -> str | None:
    record = DeliveryStore().get(delivery_id)
    return record.reply_mail_id if record else None


def in_transcript(path: str, needle: str) -> bool:
    try:
        return needle in Path(path).read_text(encoding="utf-8")
    except OSError:
        return False


async def test_mail_never_crosses_as_the_human_nor_back_to_claude(
        claude: ClaudeHarness, mock_messages: MockMessages, app_server: AppServer,
        workdir: Path) -> None:
    box = setup_plugin(claude, workdir)
    claude.seed_interactive(workdir)
    url = app_server.url
    session = TmuxClaude(claude, workdir)
    async with codex_tui(url, workdir):
        try:
            session.start()
            assert session.wait_for_screen("❯", timeout=30), session.screen()
            rec = wait_until(lambda: registered(box), 30, "the session's registration")
            # 1. the watcher wakes the idle session with mail (live delivery switched off
            #    for this one push: this step is about the watcher's road)
            wait_flock_held(watcher_path(inbox_dir(), box), timeout=30)
            n = len(mock_messages.requests)
            assert push_cli(box, "WAKE-MAIL from codex", env={"CODEX_BRIDGE_LIVE": "0"}).code == 0
            await asyncio.to_thread(seen, mock_messages, "WAKE-MAIL", n)
            # 2. the human types
            n = len(mock_messages.requests)
            session.type("HUMAN-ONE please plan it")
            await asyncio.to_thread(seen, mock_messages, "HUMAN-ONE", n)
            # 3. mail pushed live
            n = len(mock_messages.requests)
            assert push_cli(box, "LIVE-MAIL from codex").code == 0
            await asyncio.to_thread(seen, mock_messages, "LIVE-MAIL", n)
            # 4. Claude asks Codex; Codex's reply comes back as mail
            res = await arun_cli("talk", "send", "--reply-to", box, "--json",
                                 "ASK-CODEX please review", env={"CODEX_BRIDGE_URL": url})
            assert res.code == 0, res.err
            rid = json.loads(res.out)["delivery_id"]
            mail_id = wait_until(lambda: reply_mail(rid), 60, "the courier's reply mail")
            wait_until(lambda: in_transcript(rec["transcript_path"], mail_id), 30,
                       "the reply mail in the session")
            to_codex, _ = await handoff(url, "--to", "codex", "--dry-run",
                                        "--project", str(workdir))
            to_claude, _ = await handoff(url, "--to", "claude", "--dry-run",
                                         "--project", str(workdir))
        finally:
            session.stop()
    humans = [line for line in to_codex.splitlines() if line.startswith("[the human]")]
    assert humans == ["[the human] HUMAN-ONE please plan it"], humans
    assert "[Claude] MOCK_REPLY" in to_codex  # Claude's own words still cross
    assert "CODEX-HUMAN-ONE plan the migration" in to_claude
    assert "ASK-CODEX" not in to_claude, to_claude  # its request, and the reply it got
    assert mail_id not in to_claude
