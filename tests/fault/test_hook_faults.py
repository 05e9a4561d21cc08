"""The Stop hook when the machine misbehaves: a full disk, a mailbox lock held by a live
process that never lets go, a dead holder, an unusable inbox. Always exit 0 (a hook
must never break Claude's stop), nothing lost, the reason in the log."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import peek as reading
from codexbridge.inbox.location import lock_path
from tests.support.helpers import push

STOP = {"session_id": "sess-f", "cwd": "/proj", "hook_event_name": "Stop",
        "stop_hook_active": False, "prompt_id": "p"}


def hook(*, fsize: int | None = None, env: dict[str, str] | None = None,
         timeout: float = 30) -> subprocess.CompletedProcess[bytes]:
    def limit() -> None:
        if fsize is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write fails with EFBIG
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.run([sys.executable, "-m", "codexbridge", "inbox", "hook", "--as", "box"],
                          input=json.dumps(STOP).encode(), capture_output=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, preexec_fn=limit, check=False)


def log_text() -> str:
    path = Path(os.environ["CODEX_BRIDGE_HOME"]) / "logs" / "inbox-hook.log"
    return path.read_text() if path.exists() else ""


def delivered(proc: subprocess.CompletedProcess[bytes]) -> str:
    return str(json.loads(proc.stdout)["reason"]) if proc.stdout.strip() else ""


def test_a_full_disk_loses_nothing_and_delivers_once() -> None:
    push("written before the disk filled")
    # Files may not grow past 1 byte: the listener record, the delivered ids, the chain
    # state and the log all fail to be written.
    full = hook(fsize=1)
    assert full.returncode == 0
    first = delivered(full)
    assert "written before the disk filled" in first  # handed to Claude all the same
    # the batch was handed over: it is not delivered again once the disk has room
    again = hook()
    assert again.returncode == 0 and "written before the disk filled" not in delivered(again)
    assert reading.peek(inbox_dir(), "box").mails == []


def test_a_live_process_holding_the_lock_never_hangs_the_stop() -> None:
    push("waiting behind a stuck writer")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import os, sys, time, fcntl\n"
        f"fd = os.open({lock_path(inbox_dir(), 'box')!r}, os.O_RDWR | os.O_CREAT, 0o600)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        stuck = hook()
        assert stuck.returncode == 0 and stuck.stdout == b""
        # The stop ended while the lock was still held (the holder sleeps on): the hook
        # gave up waiting for it instead of waiting for it to be released.
        assert holder.poll() is None
        assert "held by another process" in log_text()
    finally:
        holder.kill()
        holder.wait()
    # the holder died: its flock went with it, and the next stop delivers the mail
    later = hook()
    assert "waiting behind a stuck writer" in delivered(later)


def test_an_unusable_inbox_is_exit_0_and_logged(tmp_path: Path) -> None:
    blocked = tmp_path / "inbox-is-a-file"
    blocked.write_text("in the way")
    proc = hook(env={"CODEX_BRIDGE_INBOX_DIR": str(blocked)})
    assert proc.returncode == 0 and proc.stdout == b""
    assert "could not record the listener" in log_text()
