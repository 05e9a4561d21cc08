"""Live delivery: the pure rules, and the settling of in-flight records against a fake
session (a unix socket and a transcript file we write ourselves). The real Claude Code
is in tests/real/test_live_delivery_real.py."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codexbridge.claude import inbox_socket
from codexbridge.claude.files import Receipt, SessionEntry
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import peek as reading
from codexbridge.inbox import store
from codexbridge.inbox.lines import new_mail
from codexbridge.inbox.location import live_files
from codexbridge.messages import live
from codexbridge.messages.listeners import Listener, read_listener, session_path
from codexbridge.messages.records import DeliveryState

SESSION = "11111111-2222-3333-4444-555555555555"

# A live process: the registry of a session whose pid is gone does not count.
PID = os.getpid()


def listener(tmp: Path, **over: Any) -> Listener:
    return Listener.from_json(listener_json(tmp, **over))


def listener_json(tmp: Path, **over: Any) -> dict[str, Any]:
    rec = {"name": "box", "cwd": str(tmp / "proj"), "session_id": SESSION,
           "claude_pid": str(PID), "messaging_socket": str(tmp / "socks" / f"{PID}.sock"),
           "transcript_path": str(tmp / "t.jsonl"), "config_dir": str(tmp / "cfg"),
           "permission_mode": "default"}
    rec.update(over)
    return rec


def registry(tmp: Path, **over: Any) -> SessionEntry:
    return SessionEntry.from_json(registry_json(tmp, **over))


def registry_json(tmp: Path, **over: Any) -> dict[str, Any]:
    reg = {"pid": PID, "sessionId": SESSION, "peerProtocol": 1, "status": "idle",
           "messagingSocketPath": str(tmp / "socks" / f"{PID}.sock")}
    reg.update(over)
    return reg


# -- target ----------------------------------------------------------------------------------

def test_target_when_everything_is_as_measured(tmp_path: Path) -> None:
    v = live.target(listener(tmp_path), registry(tmp_path), [], {}, True)
    assert v.target is not None and v.reason is None
    assert v.target.pid == PID and v.target.status == "idle"


@pytest.mark.parametrize("change, needle, drift", [
    ({"env": {"CODEX_BRIDGE_LIVE": "0"}}, "CODEX_BRIDGE_LIVE=0", False),
    ({"listener": {"messaging_socket": None}}, "--bare", False),
    ({"listener": {"permission_mode": "bypassPermissions"}}, "bypassPermissions", False),
    ({"registry": None}, "not running", False),
    ({"registry": {"sessionId": "other"}}, "not running", False),
    ({"registry": {"peerProtocol": 2}}, "peerProtocol 2", True),
    ({"exists": False}, "socket is gone", False),
])
def test_every_doubt_means_the_stop_hook(tmp_path: Path, change: dict[str, Any], needle: str,
                                        drift: bool) -> None:
    lst = listener(tmp_path, **change.get("listener", {}))
    reg = None if change.get("registry", 1) is None else registry(
        tmp_path, **change.get("registry", {}))
    v = live.target(lst, reg, [], change.get("env", {}), change.get("exists", True))
    assert v.target is None and v.reason and needle in v.reason, v
    assert v.drift is drift


def test_the_strictest_crossSessionInbound_wins(tmp_path: Path) -> None:
    settings = [("/u/settings.json", {"crossSessionInbound": "hold"}),
                ("/p/.claude/settings.json", {"crossSessionInbound": "refuse"}),
                ("/p/.claude/settings.local.json", {"crossSessionInbound": "accept"})]
    v = live.target(listener(tmp_path), registry(tmp_path), settings, {}, True)
    assert v.target is None and v.reason is not None
    assert 'crossSessionInbound="refuse"' in v.reason and "/p/.claude/settings.json" in v.reason
    ok = live.target(listener(tmp_path), registry(tmp_path),
                      [("/u", {"crossSessionInbound": "accept"})], {}, True)
    assert ok.target is not None


# -- frame, transcript, receipts ---------------------------------------------------------------

def test_frame_is_msgv1_next_and_never_asserts_a_mode() -> None:
    data = inbox_socket.frame("hello", "m-1", SESSION, "/s/cb.sock")
    assert data is not None and data.endswith(b"\n")
    body = json.loads(data)
    assert body == {"msgV": 1, "msg_id": "m-1", "type": "user", "priority": "next",
                    "message": {"role": "user", "content": "hello"},
                    "session_id": SESSION, "from": "uds:/s/cb.sock"}
    assert "from-mode" not in data.decode() and "cross-session-message" not in data.decode()
    assert json.loads(inbox_socket.frame("x", "m", SESSION, None, interrupt=True) or b"")[
        "priority"] == "now"
    assert "from" not in json.loads(inbox_socket.frame("x", "m", SESSION, None) or b"")
    assert inbox_socket.frame("x" * (inbox_socket.FRAME_MAX + 1), "m", SESSION, None) is None


def test_transcript_state_by_msg_id() -> None:
    mid = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
    user = json.dumps({"type": "user", "origin": {"kind": "peer", "msg_id": mid}}).encode()
    mid_tool = json.dumps({"type": "attachment", "attachment": {
        "type": "queued_command", "origin": {"kind": "peer", "msg_id": mid}}}).encode()
    enqueued = json.dumps({"type": "queue-operation", "operation": "enqueue",
                           "content": f"… delivery {mid} …"}).encode()
    other = json.dumps({"type": "user", "origin": {"msg_id": "zzz"}}).encode()
    assert live.transcript_state([other, b"{not json " + mid.encode(), user], mid) == \
        DeliveryState.DELIVERED
    assert live.transcript_state([mid_tool], mid) == DeliveryState.DELIVERED
    assert live.transcript_state([enqueued], mid) == DeliveryState.QUEUED
    assert live.transcript_state([enqueued, user], mid) == DeliveryState.DELIVERED
    assert live.transcript_state([other], mid) is None


def problem(receipt: dict[str, Any], msg_id: str) -> str | None:
    return inbox_socket.receipt_problem(Receipt.from_json(receipt), msg_id)


def test_receipts_only_bring_bad_news() -> None:
    base = {"type": "control", "action": "peer_message_status"}
    assert problem({**base, "status": "held", "orig_msg_id": "m"}, "m") == \
        "Claude Code held it"
    dropped = {**base, "status": "dropped", "drop_reason": "rate-limited",
               "orig_msg_id": "x", "dropped_msg_ids": ["y", "m"]}
    assert problem(dropped, "m") == "Claude Code dropped it (rate-limited)"
    refused = {**base, "status": "expired", "status_detail": "refused", "orig_msg_id": "m"}
    assert problem(refused, "m") == "Claude Code expired it (refused)"
    assert problem({**base, "status": "delivered", "orig_msg_id": "m"},
                                 "m") is None
    assert problem({**base, "status": "held", "orig_msg_id": "n"}, "m") is None
    assert problem({"action": "peer_idle_notice"}, "m") is None


# -- against a fake session ---------------------------------------------------------------------

class FakeSession:
    """A unix socket that reads frames like Claude's inbox; `answer` decides what the
    'session' writes to its transcript or sends back as a receipt."""

    def __init__(self, tmp: Path, answer: str) -> None:
        self.tmp = tmp
        self.answer = answer
        (tmp / "socks").mkdir(exist_ok=True)
        self.path = str(tmp / "socks" / f"{PID}.sock")
        self.transcript = tmp / "t.jsonl"
        self.transcript.write_text('{"type":"summary"}\n')
        self.frames: list[dict[str, Any]] = []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        self.server.listen(4)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                data = b""
                while chunk := conn.recv(65536):
                    data += chunk
            if not data.strip():
                continue  # a pusher killed before it wrote its frame
            frame = json.loads(data)
            self.frames.append(frame)
            mid = frame["msg_id"]
            if self.answer == "deliver":
                with open(self.transcript, "a") as fh:
                    fh.write(json.dumps({"type": "user", "origin": {"kind": "peer",
                                                                    "msg_id": mid}}) + "\n")
            elif self.answer == "queue":
                with open(self.transcript, "a") as fh:
                    fh.write(json.dumps({"type": "queue-operation", "operation": "enqueue",
                                         "content": frame["message"]["content"]}) + "\n")
            elif self.answer == "drop":
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as back:
                    back.connect(frame["from"][len("uds:"):])
                    back.sendall(json.dumps({"type": "control",
                                             "action": "peer_message_status",
                                             "status": "dropped", "drop_reason": "duplicate",
                                             "orig_msg_id": mid}).encode() + b"\n")

    def close(self) -> None:
        # Shut down first: that wakes the thread blocked in accept() (a close alone does
        # not), so no stale thread later accepts on a descriptor number reused by another
        # test's socket (it took the mock Messages server's connections once).
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_RDWR)
        self.server.close()
        self.thread.join(timeout=10)


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv(live.CONFIRM_ENV, "0.5")
    inbox = Path(inbox_dir())
    inbox.mkdir(parents=True, exist_ok=True, mode=0o700)
    (tmp_path / "cfg" / "sessions").mkdir(parents=True)
    (tmp_path / "cfg" / "sessions" / f"{PID}.json").write_text(json.dumps(registry_json(tmp_path)))
    Path(session_path(str(inbox), "box")).write_text(json.dumps(listener_json(tmp_path)))
    yield inbox


def mail(text: str) -> str:
    m = new_mail(text, to="box", sender="codex")
    store.push(inbox_dir(), m)
    assert m.mail_id
    return m.mail_id


def test_delivered_live_is_remembered_and_never_taken_again(box: Path, tmp_path: Path) -> None:
    fake = FakeSession(tmp_path, "deliver")
    try:
        ids = [mail("one"), mail("two")]
        out = live.deliver_now(str(box), "box")
    finally:
        fake.close()
    assert out.delivery is live.Route.LIVE and out.mails == 2
    [frame] = fake.frames  # one frame for the batch
    text = frame["message"]["content"]
    assert all(i in text for i in ids) and out.msg_id in text
    assert live_files(str(box), "box") == []
    assert store.delivered_ids(str(box), "box") >= set(ids)
    assert reading.peek(str(box), "box").mails == []


def test_a_dropped_frame_goes_back_to_the_mailbox(box: Path, tmp_path: Path) -> None:
    fake = FakeSession(tmp_path, "drop")
    try:
        mid = mail("dup")
        out = live.deliver_now(str(box), "box")
    finally:
        fake.close()
    assert out.delivery is live.Route.NEXT_STOP and "dropped it (duplicate)" in (out.reason or "")
    assert [m.mail_id for m in reading.peek(str(box), "box").mails] == [mid]


def test_a_slow_session_keeps_the_frame_and_its_late_arrival_is_delivered_once(
        box: Path, tmp_path: Path) -> None:
    # Under load Claude took a frame in after more than 2 s (the journeys): slowness is
    # not a failure — putting the mail back for the hook delivered it twice.
    fake = FakeSession(tmp_path, "silent")
    try:
        mid = mail("late")
        out = live.deliver_now(str(box), "box")
    finally:
        fake.close()
    assert out.delivery is live.Route.LIVE and "not yet in its transcript" in (out.reason or "")
    assert reading.peek(str(box), "box").mails == []  # in the session's hands
    live.reconcile(str(box), "box")  # a stop meanwhile: nothing changes
    assert reading.peek(str(box), "box").mails == []
    with open(tmp_path / "t.jsonl", "a") as fh:
        fh.write(json.dumps({"type": "user", "origin": {"msg_id": out.msg_id}}) + "\n")
    live.reconcile(str(box), "box")
    assert live_files(str(box), "box") == []
    with store.take(str(box), "box") as batch:
        assert batch.mails == [] and batch.duplicates == 0
        batch.commit()
    assert mid


def test_a_frame_never_taken_goes_back_and_a_late_arrival_is_still_caught(
        box: Path, tmp_path: Path) -> None:
    fake = FakeSession(tmp_path, "silent")
    try:
        mid = mail("never")
        out = live.deliver_now(str(box), "box")
    finally:
        fake.close()
    [path] = live_files(str(box), "box")
    record = json.loads(Path(path).read_text())
    record["at"] -= live.NEVER_TAKEN_S + 1  # no sign of it for that long
    Path(path).write_text(json.dumps(record))
    live.reconcile(str(box), "box")
    assert [m.mail_id for m in reading.peek(str(box), "box").mails] == [mid]
    # the frame surfaces after all: the next reconcile remembers it, no take repeats it
    with open(tmp_path / "t.jsonl", "a") as fh:
        fh.write(json.dumps({"type": "user", "origin": {"msg_id": out.msg_id}}) + "\n")
    live.reconcile(str(box), "box")
    with store.take(str(box), "box") as batch:
        assert batch.mails == [] and batch.duplicates == 1
        batch.commit()


def test_queued_in_the_session_waits_then_the_session_ending_puts_it_back(
        box: Path, tmp_path: Path) -> None:
    fake = FakeSession(tmp_path, "queue")
    try:
        mid = mail("busy")
        out = live.deliver_now(str(box), "box")
    finally:
        fake.close()
    assert out.delivery is live.Route.LIVE and "queue" in (out.reason or "")
    [path] = live_files(str(box), "box")
    assert json.loads(Path(path).read_text())["state"] == DeliveryState.QUEUED
    live.reconcile(str(box), "box")  # still running: nothing changes
    assert reading.peek(str(box), "box").mails == []
    os.unlink(tmp_path / "cfg" / "sessions" / f"{PID}.json")  # the session exits
    live.reconcile(str(box), "box")
    assert [m.mail_id for m in reading.peek(str(box), "box").mails] == [mid]


def test_nobody_listening_live_leaves_the_mail_alone(box: Path, tmp_path: Path) -> None:
    mid = mail("no socket")
    out = live.deliver_now(str(box), "box")
    assert out.delivery is live.Route.NEXT_STOP and "socket is gone" in (out.reason or "")
    assert [m.mail_id for m in reading.peek(str(box), "box").mails] == [mid]
    assert live.status(str(box), "box")["live"] is False


def test_a_record_an_older_codexbridge_left_in_flight_is_settled_on_time(
        box: Path, tmp_path: Path) -> None:
    # Before the states were DeliveryState, a frame in flight was recorded as "sent": an
    # upgrade in between must not leave it waiting for the session to end.
    fake = FakeSession(tmp_path, "silent")
    try:
        mid = mail("old")
        live.deliver_now(str(box), "box")
    finally:
        fake.close()
    [path] = live_files(str(box), "box")
    record = json.loads(Path(path).read_text())
    record.update(state="sent", at=record["at"] - live.NEVER_TAKEN_S - 1)
    Path(path).write_text(json.dumps(record))
    live.reconcile(str(box), "box")
    assert [m.mail_id for m in reading.peek(str(box), "box").mails] == [mid]


def test_a_stop_whose_answer_names_the_request_settles_a_frame_its_transcript_lags(
        box: Path, tmp_path: Path) -> None:
    # An interactive session's transcript can lag its Stop hook: the final message naming
    # the request token is the proof the frame was taken in (else the answer was never
    # sent back: the journeys caught it).
    fake = FakeSession(tmp_path, "silent")
    try:
        asked = new_mail("is it safe?", to="box", sender="codex",
                         extra={"request": "req_1_lagged", "expect_reply": {"thread": "t"}})
        store.push(str(box), asked)
        live.deliver_now(str(box), "box")
    finally:
        fake.close()
    live.reconcile(str(box), "box", answer="an answer that names nothing")
    assert len(live_files(str(box), "box")) == 1  # no proof yet: still in the session's hands
    live.reconcile(str(box), "box", answer="ANSWER to req_1_lagged: yes")
    assert live_files(str(box), "box") == []
    assert asked.mail_id in store.delivered_ids(str(box), "box")
    assert reading.peek(str(box), "box").mails == []


# -- the watcher's wake -----------------------------------------------------------------------

def test_wake_state_by_the_first_mail_id() -> None:
    mid = "0f0f0f0f-1111-2222-3333-444444444444"
    enqueued = json.dumps({"type": "queue-operation", "operation": "enqueue",
                           "content": f"<task-notification>… id {mid} …"}).encode()
    woke = json.dumps({"type": "user", "origin": {"kind": "task-notification"},
                       "message": {"content": f"… id {mid} …"}}).encode()
    quoted = json.dumps({"type": "user", "toolUseResult": {}, "origin": {
        "kind": "task-notification"}, "message": {"content": mid}}).encode()
    said = json.dumps({"type": "assistant", "message": {"content": mid}}).encode()
    assert live.wake_state([enqueued], mid) is DeliveryState.QUEUED
    assert live.wake_state([enqueued, woke], mid) is DeliveryState.DELIVERED
    assert live.wake_state([quoted, said, b"{torn " + mid.encode()], mid) is None


def test_a_wake_whose_watcher_died_goes_back_only_after_the_grace(
        box: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"type":"summary"}\n')
    mid = mail("woken?")
    with live.wake(str(box), "box", session_id=SESSION, transcript=str(transcript),
                   claude_pid=None) as text:
        assert text is not None and mid in text
    [path] = live_files(str(box), "box")
    # This process still holds it (it is the watcher, on its way to exit 2): kept.
    monkeypatch.setattr(live.time, "time", lambda: 10**10)
    live.reconcile(str(box), "box")
    assert live_files(str(box), "box") == [path]
    _watcher_exits()
    monkeypatch.undo()
    live.reconcile(str(box), "box")  # just died: Claude may be about to take its wake
    assert reading.peek(str(box), "box").mails == []
    monkeypatch.setattr(live.time, "time", lambda: 10**10)
    live.reconcile(str(box), "box")  # no wake after the grace: it never reached Claude
    assert [m.mail_id for m in reading.peek(str(box), "box").mails] == [mid]


def test_a_wake_the_transcript_shows_is_delivered_once(box: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"type":"summary"}\n')
    mid = mail("woken")
    with live.wake(str(box), "box", session_id=SESSION, transcript=str(transcript),
                   claude_pid=None) as text:
        assert text is not None
    with open(transcript, "a") as fh:
        fh.write(json.dumps({"type": "user", "origin": {"kind": "task-notification"},
                             "message": {"content": text}}) + "\n")
    live.reconcile(str(box), "box")
    assert live_files(str(box), "box") == []
    assert mid in store.delivered_ids(str(box), "box")
    with store.take(str(box), "box") as batch:
        assert batch.mails == []
    _watcher_exits()


def _watcher_exits() -> None:
    """What the watcher's exit does to the records it held: their locks go."""
    for fd in live._HOLDING:
        os.close(fd)
    live._HOLDING.clear()


# -- the live record on disk ------------------------------------------------------------------

def test_a_live_record_from_before_versions_reads_as_version_1(tmp_path: Path) -> None:
    """An older codexbridge wrote no version, `sent` for delivering and the pid as the
    listener had it: still read, and saved back in today's form."""
    path = tmp_path / "box.live-m1.json"
    path.write_text(json.dumps({"msg_id": "m1", "mailbox": "box", "state": "sent",
                                "at": 5, "mails": [{"id": "x"}, "junk"], "offset": "9",
                                "transcript": None, "someday": [1]}))
    record = live.LiveRecord.read(str(path))
    assert record is not None and record.version == 1 and record.via is live.Via.FRAME
    assert record.state is DeliveryState.DELIVERING and record.at == 5.0
    assert record.mails == [{"id": "x"}] and record.offset == 0 and record.transcript is None
    record.save(str(path))
    saved = json.loads(path.read_text())
    assert saved["version"] == live.LIVE_VERSION and saved["state"] == "delivering"
    assert live.LiveRecord.read(str(path)) == record


@pytest.mark.parametrize("content, why", [
    ("{torn", "not JSON"), ("[1, 2]", "not a JSON object"),
    ('{"msg_id": "m", "version": "two"}', "version 'two'"),
    ('{"state": "delivering"}', "no msg_id"),
])
def test_a_damaged_live_record_names_its_file(tmp_path: Path, content: str, why: str) -> None:
    from codexbridge.errors import DamagedStateError

    path = tmp_path / "box.live-m.json"
    path.write_text(content)
    with pytest.raises(DamagedStateError) as caught:
        live.LiveRecord.read(str(path))
    assert str(path) in caught.value.message and why in caught.value.message
    assert live.LiveRecord.read(str(tmp_path / "gone.json")) is None


def test_reconcile_passes_over_a_damaged_live_record(tmp_path: Path) -> None:
    inbox = inbox_dir()
    os.makedirs(inbox, exist_ok=True)
    damaged = Path(inbox) / "box.live-0000.json"
    damaged.write_text("{torn")
    assert damaged.name in [os.path.basename(p) for p in live_files(inbox, "box")]
    live.reconcile(inbox, "box")  # no traceback: the next stop still delivers
    assert damaged.exists()


def test_an_older_listener_record_reads(tmp_path: Path) -> None:
    """claude-codex-bridge's {name, cwd, lastSeen}; a pid as a number; wrong types absent."""
    (tmp_path / "box.session.json").write_text(json.dumps(
        {"name": "box", "cwd": "/p", "lastSeen": "2026-01-01", "claude_pid": 42,
         "session_id": 7}))
    old = read_listener(str(tmp_path), "box")
    assert old is not None
    assert (old.last_seen, old.claude_pid, old.session_id) == ("2026-01-01", 42, None)
    assert live.target(old, None, [], {}, True).reason is not None
