"""claude/files.py: Claude Code's transcript lines and registry entries, typed — what
every reader (live delivery, handling markers, the handoff) relies on."""

from __future__ import annotations

import json

import pytest

from codexbridge.claude.files import INTERRUPT_MARK, Record, SessionEntry, records_with


def line(**fields: object) -> bytes:
    return json.dumps(fields).encode() + b"\n"


def test_a_user_record_with_everything_we_read() -> None:
    rec = Record.parse_line(line(type="user", uuid="u2", parentUuid="u1", timestamp="t",
                            isMeta=True, toolUseResult={}, turnOrigin="sdk",
                            origin={"kind": "peer", "msg_id": "m"},
                            message={"role": "user", "content": "hello"}))
    assert rec is not None and rec.kind == "user" and (rec.uuid, rec.parent) == ("u2", "u1")
    assert rec.meta and rec.tool_result and rec.turn_origin == "sdk"
    assert rec.origin is not None and (rec.origin.kind, rec.origin.msg_id) == ("peer", "m")
    assert rec.message is not None and [(b.kind, b.text) for b in rec.message.blocks] == [
        ("text", "hello")]


def test_unknown_and_older_fields_are_tolerated() -> None:
    """Fields we do not use are ignored; a wrong type reads as absent; an older
    compaction link (`logicalParentUuid`) is the parent."""
    rec = Record.parse_line(line(type="assistant", uuid=5, logicalParentUuid="p", isSidechain="yes",
                            futureField=[1, 2], origin="human",
                            message={"model": 3, "content": [
                                {"type": "tool_use", "name": "Edit", "input": {"file_path": "/a"}},
                                {"type": "text", "text": 7}, "stray", {"type": "image"}]}))
    assert rec is not None and rec.uuid is None and rec.parent == "p"
    assert not rec.sidechain and rec.origin is None
    assert rec.message is not None and rec.message.model is None
    kinds = [(b.kind, b.name, b.text, b.input) for b in rec.message.blocks]
    assert kinds == [("tool_use", "Edit", None, {"file_path": "/a"}),
                     ("text", None, None, {}), ("image", None, None, {})]


@pytest.mark.parametrize("raw", [b"", b"{torn", b"[1, 2]", b'"text"', b"\xff\xfe",
                                 b"[" * 100_000])
def test_a_damaged_line_is_none_never_an_exception(raw: bytes) -> None:
    assert Record.parse_line(raw) is None


def test_a_message_without_content_is_unreadable() -> None:
    rec = Record.parse_line(line(type="user", message={"role": "user"}))
    assert rec is not None and rec.message is None


def test_queue_operations_attachments_and_interrupts() -> None:
    enq = Record.parse_line(line(type="queue-operation", operation="enqueue", content="x"))
    assert enq is not None and enq.enqueued
    att = Record.parse_line(line(type="attachment", attachment={"origin": {"msg_id": "m"}}))
    assert att is not None and att.attachment_origin is not None
    assert att.attachment_origin.msg_id == "m"
    esc = Record.parse_line(line(type="user", message={"content": [
        {"type": "text", "text": INTERRUPT_MARK + " for tool use]"}]}))
    assert esc is not None and esc.interrupt
    quoted = Record.parse_line(line(type="user", origin={"kind": "peer"},
                               message={"content": INTERRUPT_MARK + "]"}))
    assert quoted is not None and not quoted.interrupt


def test_records_with_parses_only_the_lines_that_carry_the_needle() -> None:
    lines = [line(type="user", uuid="a"), b"{torn needle", line(type="system", x="needle")]
    assert [r.kind for r in records_with(lines, "needle")] == ["system"]


def test_a_registry_entry() -> None:
    entry = SessionEntry.from_json({"sessionId": "s", "peerProtocol": 2, "status": "busy",
                                    "messagingSocketPath": "/s.sock", "version": "2.1.332",
                                    "extra": True})
    assert (entry.session_id, entry.peer_protocol, entry.status) == ("s", 2, "busy")
    assert entry.socket == "/s.sock" and entry.version == "2.1.332"
    assert entry.fields == ("extra", "messagingSocketPath", "peerProtocol", "sessionId",
                            "status", "version")
