"""A push that did not finish must not swallow the next one.

Threat: a push dies mid-write — the disk fills, the process is killed, the file-size
limit is reached — and leaves half a line at the end of the mailbox. Before, the next
push was appended straight onto that fragment: it exited 0 with an id ("written"), and
at the next delivery the glued line was set aside as unreadable, so Claude was told of a
broken line and never got the mail. Now a failed append is undone (the file is cut back
to where it was) and a torn tail left by a kill is closed before the next append: the
fragment stays a line of its own (kept in NAME.rejected.jsonl), the next mail arrives.
"""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from codexbridge.errors import StateWriteError
from codexbridge.inbox import peek as reading
from codexbridge.inbox import store
from codexbridge.inbox.lines import encode_line, new_mail
from codexbridge.inbox.location import delivered_path, mail_path, rejected_path
from tests.support.helpers import push


def _take_all(inbox: str, name: str = "box") -> store.Batch:
    with store.take(inbox, name) as batch:
        batch.commit()
    return batch


@pytest.fixture
def inbox(tmp_path: Path) -> str:
    return str(tmp_path / "inbox")


def test_a_torn_tail_does_not_swallow_the_next_push(inbox: str) -> None:
    first = push("before the torn one", inbox=inbox)
    torn = encode_line(new_mail("the push that was killed", to="box", sender="codex"))
    with open(mail_path(inbox, "box"), "ab") as fh:  # what a push killed mid-write leaves
        fh.write(torn[: len(torn) // 2])
    after = push("the next push, which said it was written", inbox=inbox)

    batch = _take_all(inbox)
    assert [m.mail_id for m in batch.mails] == [first, after]
    assert len(batch.rejected) == 1  # the fragment, set aside with its bytes
    assert batch.rejected[0].raw == torn[: len(torn) // 2]
    assert [r["lineno"] for r in reading.read_rejected(inbox, "box")] == [2]


def test_a_torn_id_line_does_not_hide_the_next_delivered_id(inbox: str) -> None:
    os.makedirs(inbox, mode=0o700)
    with open(delivered_path(inbox, "box"), "wb") as fh:
        fh.write(b"half-an-i")  # a commit killed mid-write
    store.confirm(inbox, "box", ["whole-id"])
    assert "whole-id" in store.delivered_ids(inbox, "box")


def _failing_write(monkeypatch: pytest.MonkeyPatch, path: str, code: int) -> None:
    """Writes to `path` stop half-way with `code`, as a full disk does (a short write,
    then the error)."""
    real_write = os.write
    target = os.path.realpath(path)

    def write(fd: int, data: bytes | memoryview) -> int:
        try:
            mine = os.path.realpath(f"/proc/self/fd/{fd}") == target
        except OSError:
            mine = False
        if not mine:
            return real_write(fd, data)
        view = memoryview(data)
        if len(view) > 1:
            return real_write(fd, view[: len(view) // 2])
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "write", write)


def test_a_push_that_fails_half_way_is_undone(inbox: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    first = push("already there", inbox=inbox)
    before = Path(mail_path(inbox, "box")).read_bytes()
    with monkeypatch.context() as patch:
        _failing_write(patch, mail_path(inbox, "box"), errno.ENOSPC)
        with pytest.raises(StateWriteError) as failed:
            push("x" * 5000, inbox=inbox)
    assert failed.value.exit_code == 73
    assert Path(mail_path(inbox, "box")).read_bytes() == before  # nothing of it is left
    after = push("the next push", inbox=inbox)
    batch = _take_all(inbox)
    assert [m.mail_id for m in batch.mails] == [first, after] and batch.rejected == []
    assert not os.path.exists(rejected_path(inbox, "box"))


def test_the_kernels_own_short_write_is_undone(inbox: str) -> None:
    """A real short write: the file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored) lets the
    kernel write part of the line and then refuse the rest (EFBIG) — what a disk that
    fills mid-line does, without filling any disk of the machine."""
    push("already there", inbox=inbox)
    path = mail_path(inbox, "box")
    before = Path(path).read_bytes()
    source = (
        "import os, resource, sys\n"  # (Python starts with SIGXFSZ ignored)
        "limit = os.path.getsize(sys.argv[2]) + 100\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))\n"
        "from codexbridge.inbox import store\n"
        "from codexbridge.inbox.lines import new_mail\n"
        "try:\n"
        "    store.push(sys.argv[1], new_mail('y' * 5000, to='box', sender='codex'))\n"
        "except OSError as exc:\n"
        "    sys.exit(f'refused: {exc}')\n"
    )
    done = subprocess.run([sys.executable, "-c", source, inbox, path], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 1 and "refused" in done.stderr, done.stderr
    assert Path(path).read_bytes() == before
    assert resource.getrlimit(resource.RLIMIT_FSIZE)[0] == resource.RLIM_INFINITY  # ours
