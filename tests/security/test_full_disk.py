"""A full or read-only disk where the mailbox lives: a push says so and stores nothing,
and the mailbox stays readable.

Threat: the disk holding the state home fills up (or is remounted read-only, or is
read-only inside Codex's sandbox) while mail is pushed. Before, such a push exited 8
with the errno wrapped as a generic mailbox error, and a write that filled the disk
half-way left a torn line that swallowed the next mail. Now it exits 73 (StateWriteError:
the path, what is wrong, the fix), the mailbox is byte for byte what it was, every reader
still reads it, and the next push once there is room is delivered.

How the disk is filled: tests/support/crash.py fails the child's writes as a full disk
does — the write that no longer fits lands half and fails with ENOSPC, every later
write, fsync and new file too (EROFS for read-only) — on the files under one directory
only: the inbox, or the whole state home. Nothing on the machine is filled or mounted.
Not RLIMIT_FSIZE: it caps every file the process writes by size (the first to go over
is the biggest one, not the mailbox) and gives EFBIG, not what a full disk gives; it
proves the kernel's own short write is undone (tests/security/test_mail_torn_write.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import peek as reading
from codexbridge.inbox import store
from codexbridge.inbox.lines import new_mail
from codexbridge.inbox.location import mail_path
from tests.support.crash import CRASH_ENV, UNDER_ENV
from tests.support.pause import REPO_ROOT, child_pythonpath


def _push(text: str, crash: str | None = None, under: str | None = None
          ) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if crash is not None and under is not None:
        env.update({CRASH_ENV: crash, UNDER_ENV: under})
        env["PYTHONPATH"] = child_pythonpath(env)
    return subprocess.run([sys.executable, "-m", "codexbridge", "inbox", "push", "--to",
                           "box", "--new", text], env=env, capture_output=True, text=True,
                          timeout=60, cwd=REPO_ROOT, check=False)


@pytest.fixture
def box() -> bytes:
    """A mailbox holding one mail; its bytes."""
    store.push(inbox_dir(), new_mail("MAIL BEFORE", to="box", sender="codex"))
    return Path(mail_path(inbox_dir(), "box")).read_bytes()


def _steps_under(directory: str, tmp_path: Path) -> int:
    """How many writing steps a push makes under `directory` (crash.py's trace)."""
    trace = tmp_path / "trace.txt"
    done = _push("MAIL TRACED", f"trace:{trace}", directory)
    assert done.returncode == 0, done.stderr
    with store.take(inbox_dir(), "box") as batch:  # (back to the one mail before)
        assert [m.text for m in batch.mails][-1] == "MAIL TRACED"
        batch.commit()
    store.push(inbox_dir(), new_mail("MAIL BEFORE", to="box", sender="codex"))
    return len(trace.read_text().splitlines())


def _unchanged_and_readable(before: bytes) -> None:
    assert Path(mail_path(inbox_dir(), "box")).read_bytes() == before  # nothing stored
    peek = subprocess.run([sys.executable, "-m", "codexbridge", "inbox", "peek", "--as",
                           "box"], capture_output=True, text=True, timeout=60, check=False)
    assert peek.returncode == 0 and "MAIL BEFORE" in peek.stdout, peek.stderr
    assert reading.peek(inbox_dir(), "box").unreadable == []


def test_a_push_onto_a_full_inbox_exits_73_at_every_step(box: bytes, tmp_path: Path) -> None:
    inbox = inbox_dir()
    steps = _steps_under(inbox, tmp_path)
    assert steps >= 3  # the lock, the mailbox open, its write (and fsync)
    before = Path(mail_path(inbox, "box")).read_bytes()
    for k in range(1, steps + 1):
        done = _push("MAIL LOST", f"full:{k}", inbox)
        if done.returncode == 0:  # the disk filled only after the push was whole
            with store.take(inbox, "box") as batch:
                batch.commit()
            assert [m.text for m in batch.mails] == ["MAIL BEFORE", "MAIL LOST"]
            store.push(inbox, new_mail("MAIL BEFORE", to="box", sender="codex"))
            before = Path(mail_path(inbox, "box")).read_bytes()
            continue
        assert done.returncode == 73, (k, done.stderr)
        assert "the disk is full; nothing was stored" in done.stderr
        assert "Fix: free space on the disk that holds" in done.stderr
        _unchanged_and_readable(before)
    # Room again: the next push goes in, and nothing that failed comes with it.
    assert _push("MAIL AFTER").returncode == 0
    with store.take(inbox, "box") as batch:
        batch.commit()
    assert [m.text for m in batch.mails] == ["MAIL BEFORE", "MAIL AFTER"]
    assert batch.rejected == []


def test_a_push_onto_a_full_state_home_exits_73(box: bytes) -> None:
    home = os.environ["CODEX_BRIDGE_HOME"]
    done = _push("MAIL LOST", "full:1", home)
    assert done.returncode == 73, done.stderr
    assert "the disk is full; nothing was stored" in done.stderr
    _unchanged_and_readable(box)


def test_a_push_onto_a_read_only_inbox_exits_73(box: bytes) -> None:
    done = _push("MAIL LOST", "readonly", inbox_dir())
    assert done.returncode == 73, done.stderr
    assert "read-only file system; nothing was stored" in done.stderr
    assert f"Fix: make {os.environ['CODEX_BRIDGE_HOME']} writable" in done.stderr
    _unchanged_and_readable(box)
