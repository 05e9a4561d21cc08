"""Errors surface instead of being swallowed: a damaged loop-guard file fails closed and
says which file; a damaged listener record is a note, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codexbridge.hooks import process as chain
from codexbridge.hooks.loop_guard import Action, ChainState, HookInput, decide
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import peek as reading
from codexbridge.inbox import store
from codexbridge.inbox.lines import new_mail
from codexbridge.inbox.location import chain_path
from codexbridge.messages.listeners import read_listeners, record_listener, session_path

STOP = {"session_id": "sess-1", "cwd": "/proj", "prompt_id": "p1",
        "hook_event_name": "Stop", "stop_hook_active": False}

DAMAGED = [
    pytest.param("{not json", id="not-json"),
    pytest.param("[" * 100000, id="nested-100000"),
    pytest.param("[1, 2]", id="not-an-object"),
    pytest.param('{"sessions": []}', id="sessions-not-a-table"),
    pytest.param('{"sessions": {"sess-1": 3}}', id="entry-not-a-table"),
    pytest.param('{"sessions": {"sess-1": {"blocks": "x"}}}', id="blocks-not-a-count"),
    pytest.param('{"version": "2", "sessions": {}}', id="version-not-a-number"),
    pytest.param('{"version": 0, "sessions": {}}', id="version-zero"),
]


def _write_chain(text: str) -> str:
    path = chain_path(inbox_dir(), "box")
    os.makedirs(inbox_dir(), mode=0o700, exist_ok=True)
    Path(path).write_text(text)
    return path


def _hook(stdin: dict[str, object]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "codexbridge", "inbox", "hook", "--as", "box"],
                          input=json.dumps(stdin).encode(), capture_output=True, timeout=60,
                          env=dict(os.environ), check=False)


def _log() -> str:
    path = Path(os.environ["CODEX_BRIDGE_HOME"]) / "logs" / "inbox-hook.log"
    return path.read_text() if path.exists() else ""


@pytest.mark.parametrize("text", DAMAGED)
def test_a_damaged_chain_file_counts_as_over_the_limit(text: str) -> None:
    path = _write_chain(text)
    stored = chain.load_chain(inbox_dir(), "box", "sess-1")
    assert stored is not None
    state = ChainState(*stored)
    assert state.damaged and path in state.damaged and "rm " in state.damaged
    # Whatever the prompt (a new one would start a new chain): held, not delivered.
    fresh = HookInput.read({**STOP, "prompt_id": "another"})
    held = decide(fresh, state, True, 3)
    assert held.action is Action.HOLD and held.why == state.damaged
    assert decide(fresh, state, False, 3).action is Action.ALLOW  # nothing waiting: stop
    # Neither counting nor ending a chain repairs it behind the person's back.
    chain.save_chain(inbox_dir(), "box", "sess-1", 1, "p1")
    chain.clear_chain(inbox_dir(), "box", "sess-1")
    assert Path(path).read_text() == text


@pytest.mark.parametrize("text", [DAMAGED[0], DAMAGED[1]])
def test_the_stop_hook_holds_the_mail_and_names_the_damaged_file(text: str) -> None:
    path = _write_chain(text)
    mail = new_mail("held mail", to="box", sender="codex")
    store.push(inbox_dir(), mail)
    proc = _hook(STOP)
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    assert [m.text for m in reading.peek(inbox_dir(), "box").mails] == ["held mail"]
    log = _log()
    assert f"{path} is damaged" in log and "delete it: rm" in log
    assert "Traceback" not in log and "RecursionError" not in log
    # Deleted as the note says: the next stop delivers.
    os.unlink(path)
    assert b"held mail" in _hook(STOP).stdout


def test_a_sound_chain_file_still_reads_as_before() -> None:
    chain.save_chain(inbox_dir(), "box", "sess-1", 2, "p1")
    assert chain.load_chain(inbox_dir(), "box", "sess-1") == (2, "p1")
    assert chain.load_chain(inbox_dir(), "box", "other") is None


@pytest.mark.parametrize("text", ["{not json", "[" * 100000, "[1]", ""])
def test_a_damaged_listener_record_is_a_note_not_a_traceback(text: str) -> None:
    record_listener(inbox_dir(), "good", dict(STOP), "hook")
    path = session_path(inbox_dir(), "broken")
    Path(path).write_text(text)
    listeners = read_listeners(inbox_dir())
    assert listeners["good"]["session_id"] == "sess-1"
    assert listeners["broken"] == {"name": "broken",
                                   "error": f"unreadable session file ({path})"}
