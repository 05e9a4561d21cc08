"""The generated results (codex/protocol/generated/results.py) read real payloads and never
reject the protocol's drift."""

from __future__ import annotations

import copy
import inspect
from typing import Any

import pytest

from codexbridge.codex.protocol.generated import results
from codexbridge.codex.protocol.generated.results import (
    InitializeResponse,
    Thread,
    ThreadItem,
    ThreadItemsListResponse,
    ThreadLoadedListResponse,
    ThreadQueueAddResponse,
    ThreadQueueDeleteResponse,
    ThreadReadResponse,
    ThreadStatus,
    ThreadTurnsListResponse,
    Turn,
    TurnStartResponse,
)
from codexbridge.codex.protocol.threads import ThreadInfo
from codexbridge.codex.protocol.wire import Kept, Record
from tests.support import payloads


def test_thread_from_thread_read() -> None:
    raw = {"thread": payloads.thread(), "readState": {"lastReadTurnId": None}}
    result = ThreadReadResponse.from_wire(raw)
    t = result.thread
    assert t is not None
    assert (t.id, t.name, t.cwd, t.ephemeral, t.thread_source, t.preview, t.updated_at) == (
        payloads.USER_THREAD, "Mock title", payloads.WORKDIR, False, "user", "first turn",
        1796018498)
    assert t.status == ThreadStatus(type="idle") and t.status_label == "idle"
    # unknown fields (readState, historyMode, environments…) are ignored, not rejected
    assert result == ThreadReadResponse(thread=t)


def test_records_are_read_only_and_equal_by_fields() -> None:
    a = Thread.from_wire({"id": "x", "threadSource": "user", "updatedAt": 5})
    b = Thread(id="x", thread_source="user", updated_at=5)
    assert a == b and hash(a) == hash(b) and a != Thread(id="y")
    assert "thread_source='user'" in repr(a)
    with pytest.raises(AttributeError):
        setattr(a, "id", "z")  # noqa: B010 - the attribute is the point
    assert ThreadInfo is Thread  # the thread the code reads is the generated one


def test_active_status_with_flags() -> None:
    t = Thread.from_wire(payloads.thread(
        status={"type": "active", "activeFlags": ["waitingOnApproval"]}))
    assert t.status is not None and t.status.active_flags == ("waitingOnApproval",)
    assert t.status_label == "active(waitingOnApproval)" and t.busy


@pytest.mark.parametrize("raw", [
    payloads.thread(),
    payloads.title_thread(),
    payloads.thread(status={"type": "active", "activeFlags": ["waitingOnApproval"]}),
    payloads.thread(name=None, thread_source=None),
    {"id": "x", "status": "idle"},
    {"id": "x", "status": {"type": "systemError"}, "name": 5, "cwd": ["no"],
     "updatedAt": "yesterday", "preview": None, "ephemeral": None, "threadSource": 3},
    {"id": "x", "status": 42, "turns": "not a list"},
    {},
])
def test_thread_reads_the_same_alone_or_in_a_result(raw: dict[str, Any]) -> None:
    # `talk say` reads thread/read's thread, `talk list` too: one reader, one record.
    alone = ThreadInfo.from_wire(raw)
    assert ThreadReadResponse.from_wire({"thread": raw}).thread == alone
    assert isinstance(alone.id, str) and isinstance(alone.status_label, str)


def test_odd_field_types_fall_back_instead_of_failing() -> None:
    t = Thread.from_wire({"id": 7, "name": ["x"], "updatedAt": "soon",
                          "status": None, "turns": [5], "ephemeral": 1})
    assert t.id == "7" and t.name is None and t.updated_at is None
    assert t.status is None and t.status_label == "unknown"
    assert t.turns == () and t.ephemeral is True
    turn = Turn.from_wire({"id": "u", "error": "not an object", "items": {"a": 1},
                           "startedAt": 1.5})
    assert turn.error is None and turn.items == () and turn.started_at is None
    assert Thread.from_wire({"updatedAt": True}).updated_at is None  # a bool is no time


def test_turn_and_items() -> None:
    error = {"message": "boom", "codexErrorInfo": "internalServerError",
             "additionalDetails": None}
    raw = payloads.turn(items=[payloads.user_message("hi"), payloads.agent_message("yo"),
                               payloads.command_item()],
                        status="failed", error=error)
    turn = Turn.from_wire(raw)
    assert (turn.id, turn.status, turn.started_at, turn.completed_at) == (
        payloads.TURN_1, "failed", 1796018498, 1796018498)
    assert turn.error is not None and turn.error.message == "boom"
    assert turn.error.codex_error_info == "internalServerError"
    assert turn.error.as_dict() == error  # the error as codex sent it
    assert [i.type for i in turn.items] == ["userMessage", "agentMessage", "commandExecution"]


def test_item_round_trips_unchanged() -> None:
    for raw in (payloads.user_message("hi ✓"), payloads.agent_message("yo"),
                payloads.command_item(), {"type": "brandNewItem", "id": "n", "x": [1]},
                {"type": "reasoning", "summary": []}):
        assert ThreadItem.from_wire(copy.deepcopy(raw)).as_dict() == raw


def test_turns_list_result() -> None:
    turns = [payloads.turn(payloads.TURN_1), payloads.turn(payloads.TURN_2)]
    page = {"data": turns, "nextCursor": "abc", "backwardsCursor": None}
    result = ThreadTurnsListResponse.from_wire(page)
    assert [t.id for t in result.data] == [payloads.TURN_1, payloads.TURN_2]
    assert result.next_cursor == "abc" and result.backwards_cursor is None
    # a non-object entry is skipped, the rest kept
    assert len(ThreadTurnsListResponse.from_wire({"data": [5, turns[0]]}).data) == 1


def test_items_list_result() -> None:
    entries = [payloads.item_entry(payloads.TURN_1, payloads.user_message("a")),
               payloads.item_entry(payloads.TURN_1, payloads.agent_message("b")),
               {"turnId": payloads.TURN_1},  # no item: skipped
               "garbage"]
    result = ThreadItemsListResponse.from_wire({"data": entries, "nextCursor": None})
    assert [(e.turn_id, e.item.type if e.item else None) for e in result.data] == [
        (payloads.TURN_1, "userMessage"), (payloads.TURN_1, "agentMessage")]
    assert result.data[0].started_at_ms == 1796018498000
    assert ThreadItemsListResponse.from_wire({}).data == ()
    assert result.raw["data"] is entries  # the page as it arrived (handoff reads it)


def test_loaded_list_result() -> None:
    result = ThreadLoadedListResponse.from_wire(
        {"data": [payloads.USER_THREAD, 5, None, payloads.TITLE_THREAD], "nextCursor": None})
    assert result.data == (payloads.USER_THREAD, payloads.TITLE_THREAD)
    assert result.next_cursor is None


def test_turn_start_result() -> None:
    running = payloads.turn(payloads.TURN_2, status="inProgress", completed_at=None,
                            items_view="notLoaded")
    turn = TurnStartResponse.from_wire({"turn": running}).turn
    assert turn is not None and turn.id == payloads.TURN_2 and turn.status == "inProgress"
    assert turn.completed_at is None and turn.items == ()


def test_queue_results() -> None:
    added = ThreadQueueAddResponse.from_wire({"queuedSubmission": {
        "id": "sub-1", "clientUserMessageId": "cb_1", "input": []}})
    assert added.queued_submission is not None and added.queued_submission.id == "sub-1"
    assert added.queued_submission.client_user_message_id == "cb_1"
    assert ThreadQueueAddResponse.from_wire({}).queued_submission is None
    # `deleted` counts only as a real true
    assert ThreadQueueDeleteResponse.from_wire({"deleted": True}).deleted
    assert not ThreadQueueDeleteResponse.from_wire({"deleted": 1}).deleted


def test_initialize_result() -> None:
    raw = {**payloads.INITIALIZE_RESULT, "somethingNew": True}
    result = InitializeResponse.from_wire(raw)
    assert result.platform_os == "linux" and result.codex_home == payloads.CODEX_HOME
    assert result.user_agent is not None and result.user_agent.startswith("codexbridge/")
    assert result.as_dict() == raw  # kept whole: doctor prints fields we do not read


def test_resume_result_extras_are_tolerated() -> None:
    # thread/resume carries experimental fields (protocol-notes "Handshake"); the thread
    # inside reads as usual.
    result = ThreadReadResponse.from_wire(payloads.resume_result(payloads.thread()))
    assert result.thread is not None and result.thread.id == payloads.USER_THREAD


def test_thread_read_without_thread_has_none() -> None:
    # No thread object: nothing to list (codex/threads.py leaves it out).
    assert ThreadReadResponse.from_wire({"readState": None}).thread is None
    assert ThreadReadResponse.from_wire({"thread": "nope"}).thread is None
    assert ThreadReadResponse.from_wire("not even an object").thread is None


RECORDS = [c for c in vars(results).values()
           if inspect.isclass(c) and issubclass(c, Record) and c.__module__ == results.__name__]
ODD = [None, True, 0, 1.5, "", "x", [], [None, 1, "s", {}], {}, {"type": 5}]


@pytest.mark.parametrize("record", RECORDS, ids=lambda c: c.__name__)
def test_every_field_is_read_once_and_defaults_as_made_empty(record: type[Record]) -> None:
    # `_wire` is the one list of a record's keys: it reads every slot (but `raw`, which
    # Kept fills with the whole object), each once, and nothing read reads as __init__'s
    # defaults — the two places a default is written agree.
    names = [name for name, _key, _read in record._wire]
    kept = ("raw",) if issubclass(record, Kept) else ()
    assert sorted([*names, *kept]) == sorted(record.__slots__)
    assert record.from_wire({}) == record() == record.from_wire("not an object")
    for odd in ODD:  # every field of an odd type at once: read, never raised
        made = record.from_wire({key: odd for _name, key, _read in record._wire})
        assert type(made) is record
