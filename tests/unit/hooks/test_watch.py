"""The asyncRewake watcher: wake on mail (exit 2), quiet timeout, newest replaces older."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from codexbridge.hooks.watcher import parse_claim
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import peek as reading
from codexbridge.inbox.location import watcher_path
from tests.support.binaries import wait_flock_held
from tests.support.helpers import push


def start(name: str = "box", timeout: float = 20, env: dict[str, str] | None = None
          ) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "codexbridge", "inbox", "watch", "--as", name,
         "--timeout", str(timeout), "--interval", "0.05"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})})


def wait_claimed(proc: subprocess.Popen[bytes], name: str = "box", timeout: float = 10
                 ) -> None:
    path = watcher_path(inbox_dir(), name)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path, "rb") as fh:
                if parse_claim(fh.read()) == proc.pid:
                    wait_flock_held(path, max(0.1, deadline - time.monotonic()))
                    return
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    raise AssertionError("watcher never claimed the mailbox")


def test_parse_claim() -> None:
    assert parse_claim(b"123\n") == 123
    assert parse_claim(b"") is None and parse_claim(b"12x") is None


def test_wakes_with_the_mail_on_stderr() -> None:
    proc = start(timeout=3600)
    wait_claimed(proc)
    push("wake up")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2  # woken by the mail: its own timeout is an hour away
    assert b"wake up" in err and b'mailbox "box"' in err and out == b""
    assert reading.peek(inbox_dir(), "box").mails == []


def test_mail_already_waiting_wakes_at_once() -> None:
    push("early")
    proc = start()
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 2 and b"early" in err


def test_times_out_quietly() -> None:
    proc = start(timeout=0.3)
    out, err = proc.communicate(timeout=10)
    assert (proc.returncode, out, err) == (0, b"", b"")


def test_newest_watcher_replaces_the_older() -> None:
    old = start()
    wait_claimed(old)
    new = start()
    wait_claimed(new)
    _, old_err = old.communicate(timeout=5)  # leaves within a poll or two
    assert old.returncode == 0 and old_err == b""
    push("for the new one")
    _, err = new.communicate(timeout=10)
    assert new.returncode == 2 and b"for the new one" in err


def test_exits_when_claude_is_gone() -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    proc = start(env={"CLAUDE_PID": dead.stdout.strip()})
    proc.communicate(timeout=10)
    assert proc.returncode == 0


def test_headless_claude_gets_no_watcher() -> None:
    """`claude -p` waits for asyncRewake hooks it cannot use: leave at once."""
    push("stays")
    # With mail waiting and an hour to wait, only leaving at once ends it quietly.
    proc = start(timeout=3600, env={"CLAUDE_CODE_ENTRYPOINT": "sdk-cli"})
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err) == (0, b"", b"")
    assert [m.text for m in reading.peek(inbox_dir(), "box").mails] == ["stays"]


def test_bad_name_is_a_usage_error() -> None:
    proc = subprocess.run([sys.executable, "-m", "codexbridge", "inbox", "watch", "--as",
                           "a/b", "--timeout", "1"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 2 and "invalid mailbox name" in proc.stderr
