"""The store: push, peek, take-by-rename, recovery of dead takers, de-dup, rejected lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import peek as reading
from codexbridge.inbox import store
from codexbridge.inbox.lines import new_mail
from codexbridge.inbox.location import (
    delivered_path,
    has_pending,
    mail_path,
    rejected_path,
    taken_files,
)
from tests.support.helpers import push
from tests.support.pause import pause_env

from .test_lines import INTEROP_LINE


@pytest.fixture
def inbox(tmp_path: Path) -> str:
    return str(tmp_path / "inbox")


def take_all(inbox: str, name: str = "box") -> store.Batch:
    with store.take(inbox, name) as batch:
        batch.commit()
    return batch


def test_inbox_dir_follows_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from codexbridge.host.paths import state_dir

    assert inbox_dir() == str(state_dir(create=False) / "inbox")
    monkeypatch.setenv("CODEX_BRIDGE_INBOX_DIR", str(tmp_path / "elsewhere"))
    assert inbox_dir() == str(tmp_path / "elsewhere")


def test_push_then_take_delivers_in_order_and_empties(inbox: str) -> None:
    ids = [push(f"m{i}", inbox=inbox) for i in range(5)]
    assert oct(os.stat(inbox).st_mode & 0o777) == "0o700"
    assert oct(os.stat(mail_path(inbox, "box")).st_mode & 0o777) == "0o600"
    batch = take_all(inbox)
    assert [m.mail_id for m in batch.mails] == ids
    assert not os.path.exists(mail_path(inbox, "box"))
    assert taken_files(inbox, "box") == []
    assert take_all(inbox).empty
    assert not has_pending(inbox, "box")


def test_peek_does_not_consume(inbox: str) -> None:
    push("hello", inbox=inbox)
    first = reading.peek(inbox, "box")
    second = reading.peek(inbox, "box")
    assert [m.text for m in first.mails] == [m.text for m in second.mails] == ["hello"]
    assert [m.text for m in take_all(inbox).mails] == ["hello"]


def test_push_during_take_goes_to_the_next_batch(inbox: str) -> None:
    push("before", inbox=inbox)
    with store.take(inbox, "box") as batch:
        push("during", inbox=inbox)  # must not land in the taken file
        batch.commit()
    assert [m.text for m in batch.mails] == ["before"]
    assert [m.text for m in take_all(inbox).mails] == ["during"]


def test_released_batch_is_recovered_by_the_next_take(inbox: str) -> None:
    push("keep me", inbox=inbox)
    with store.take(inbox, "box") as batch:
        assert [m.text for m in batch.mails] == ["keep me"]
        # no commit: delivery failed
    assert has_pending(inbox, "box")
    assert [m.text for m in reading.peek(inbox, "box").mails] == ["keep me"]
    again = take_all(inbox)
    assert [m.text for m in again.mails] == ["keep me"] and again.recovered_files == 1


def test_live_takers_batch_is_left_alone(inbox: str) -> None:
    push("in flight", inbox=inbox)
    with store.take(inbox, "box") as batch:
        other = take_all(inbox)  # a concurrent drain
        assert other.empty and other.recovered_files == 0
        assert reading.peek(inbox, "box").in_flight == 1
        assert not has_pending(inbox, "box")
        batch.commit()


def test_orphan_named_for_a_dead_pid_is_recovered(inbox: str) -> None:
    os.makedirs(inbox, mode=0o700)
    orphan = os.path.join(inbox, "box.jsonl.taken-999999-1")
    with open(orphan, "wb") as fh:
        fh.write(INTEROP_LINE.replace(b'"to":"bridge"', b'"to":"box"'))
    push("newer", inbox=inbox)
    assert has_pending(inbox, "box")
    batch = take_all(inbox)
    assert [m.text for m in batch.mails] == ["順便幫我看 auth", "newer"]  # old batch first
    assert not os.path.exists(orphan)


def test_sigkilled_drain_loses_nothing(inbox: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = [push(f"m{i}", inbox=inbox) for i in range(3)]
    monkeypatch.setenv("CODEX_BRIDGE_INBOX_DIR", inbox)
    env = pause_env("after_take", 30)
    proc = subprocess.Popen([sys.executable, "-m", "codexbridge", "inbox", "drain", "--as",
                             "box", "--json"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stderr is not None
    assert b"codexbridge-test-pause: after_take" in proc.stderr.readline()
    assert taken_files(inbox, "box") and not os.path.exists(mail_path(inbox, "box"))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert [m.mail_id for m in take_all(inbox).mails] == ids


def test_killed_after_recording_is_not_delivered_twice(inbox: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    push("once", inbox=inbox)
    monkeypatch.setenv("CODEX_BRIDGE_INBOX_DIR", inbox)
    env = pause_env("before_delete", 30)
    proc = subprocess.Popen([sys.executable, "-m", "codexbridge", "inbox", "drain", "--as",
                             "box", "--json"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stderr is not None and proc.stdout is not None
    assert b"before_delete" in proc.stderr.readline()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    delivered = json.loads(proc.stdout.read())
    assert [m["text"] for m in delivered["messages"]] == ["once"]
    assert taken_files(inbox, "box")  # the file was not deleted...
    again = take_all(inbox)
    assert again.empty and again.duplicates == 1  # ...but its id was remembered
    assert taken_files(inbox, "box") == []


def test_duplicate_ids_within_a_batch_are_delivered_once(inbox: str) -> None:
    mail = new_mail("x", to="box", sender="codex")
    store.push(inbox, mail)
    store.push(inbox, mail)
    batch = take_all(inbox)
    assert len(batch.mails) == 1 and batch.duplicates == 1


def test_mail_without_id_is_never_dropped_as_duplicate(inbox: str) -> None:
    os.makedirs(inbox, mode=0o700)
    with open(mail_path(inbox, "box"), "wb") as fh:
        fh.write(b'{"text":"ok"}\n{"text":"ok"}\n')
    assert [m.text for m in take_all(inbox).mails] == ["ok", "ok"]


def test_malformed_lines_go_to_rejected_file_not_away(inbox: str) -> None:
    push("good", inbox=inbox)
    with open(mail_path(inbox, "box"), "ab") as fh:
        fh.write(b"{half a line\n\xff\xfe\n")
    peeked = reading.peek(inbox, "box")
    assert len(peeked.mails) == 1 and len(peeked.unreadable) == 2
    batch = take_all(inbox)
    assert [m.text for m in batch.mails] == ["good"] and len(batch.rejected) == 2
    records = reading.read_rejected(inbox, "box")
    assert [r["lineno"] for r in records] == [2, 3]
    assert records[0]["line"] == "{half a line" and "not JSON" in records[0]["reason"]
    assert "line_base64" in records[1]
    assert reading.peek(inbox, "box").rejected_count == 2
    summary = {s.name: s for s in reading.summarize(inbox, {})}
    assert summary["box"].rejected == 2 and summary["box"].pending == 0
    assert os.path.exists(rejected_path(inbox, "box"))


def test_foreign_late_append_is_put_back(inbox: str) -> None:
    push("first", inbox=inbox)
    with store.take(inbox, "box") as batch:
        taken = taken_files(inbox, "box")[0]
        with open(taken, "ab") as fh:  # a writer that ignores our lock, after the rename
            fh.write(b'{"id":"late-1","text":"late"}\n')
        batch.commit()
    assert [m.text for m in batch.mails] == ["first"]
    assert [m.text for m in take_all(inbox).mails] == ["late"]


def test_delivered_record_stays_bounded(inbox: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "DELIVERED_KEEP", 10)
    for i in range(30):
        push(f"m{i}", inbox=inbox)
        take_all(inbox)
    with open(delivered_path(inbox, "box"), "rb") as fh:
        kept = fh.read().splitlines()
    assert 10 <= len(kept) < 30  # 30 were delivered; only the newest are remembered
    assert kept[-1].decode() in store.delivered_ids(inbox, "box")


def test_summarize_lists_every_mailbox(inbox: str) -> None:
    push("a", to="alpha", inbox=inbox)
    push("b", to="beta", inbox=inbox)
    push("b2", to="beta", inbox=inbox)
    listeners = {"gamma": {"name": "gamma", "cwd": "/g"}}
    rows = {s.name: s for s in reading.summarize(inbox, listeners)}
    assert rows["alpha"].pending == 1 and rows["beta"].pending == 2
    assert rows["gamma"].pending == 0 and rows["gamma"].listener == {"name": "gamma",
                                                                     "cwd": "/g"}
