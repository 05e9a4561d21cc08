"""The pydantic models read real payloads and never reject the protocol's drift."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from codexbridge.protocol.generated.models import (
    InitializeResponse,
    Thread,
    ThreadItem,
    ThreadItemsListResponse,
    ThreadLoadedListResponse,
    ThreadReadResponse,
    ThreadStatus,
    ThreadTurnsListResponse,
    Turn,
    TurnStartResponse,
)
from codexbridge.protocol.threads import ThreadInfo
from tests.support import payloads


def test_thread_from_thread_read() -> None:
    raw = {"thread": payloads.thread(), "readState": {"lastReadTurnId": None}}
    result = ThreadReadResponse.model_validate(raw)
    t = result.thread
    assert (t.id, t.name, t.cwd, t.ephemeral, t.thread_source, t.preview, t.updated_at) == (
        payloads.USER_THREAD, "Mock title", payloads.WORKDIR, False, "user", "first turn",
        1796018498)
    assert t.status == ThreadStatus(type="idle") and t.status_label == "idle"
    # unknown fields are kept, not rejected
    assert result.model_extra == {"readState": {"lastReadTurnId": None}}
    assert t.model_extra is not None and t.model_extra["historyMode"] == "paginated"
    assert t.model_extra["environments"][0]["environmentId"] == "local"


def test_camel_and_snake_names_both_work() -> None:
    a = Thread.model_validate({"id": "x", "threadSource": "user", "updatedAt": 5})
    b = Thread(id="x", thread_source="user", updated_at=5)
    assert a == b
    assert a.model_dump(by_alias=True, exclude_unset=True) == {
        "id": "x", "threadSource": "user", "updatedAt": 5}


def test_active_status_with_flags() -> None:
    t = Thread.model_validate(payloads.thread(
        status={"type": "active", "activeFlags": ["waitingOnApproval"]}))
    assert t.status is not None and t.status.active_flags == ["waitingOnApproval"]
    assert t.status_label == "active(waitingOnApproval)"


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
def test_thread_info_is_the_same_through_the_model_or_the_dict(raw: dict[str, Any]) -> None:
    # `talk list` parses through the model, `talk say` reads the dict: same record.
    assert ThreadInfo.from_model(Thread.model_validate(raw)) == ThreadInfo.from_thread(raw)


def test_odd_field_types_fall_back_instead_of_failing() -> None:
    t = Thread.model_validate({"id": 7, "name": ["x"], "updatedAt": "soon",
                               "status": None, "turns": [5], "ephemeral": 1})
    assert t.id == "7" and t.name is None and t.updated_at is None
    assert t.status is None and t.status_label == "unknown"
    assert t.turns == [] and t.ephemeral is True
    turn = Turn.model_validate({"id": "u", "error": "not an object", "items": {"a": 1},
                                "startedAt": 1.5})
    assert turn.error is None and turn.items == [] and turn.started_at is None


def test_turn_and_items() -> None:
    raw = payloads.turn(items=[payloads.user_message("hi"), payloads.agent_message("yo"),
                               payloads.command_item()],
                        status="failed", error={"message": "boom",
                                                "codexErrorInfo": "internalServerError",
                                                "additionalDetails": None})
    turn = Turn.model_validate(raw)
    assert (turn.id, turn.status, turn.started_at, turn.completed_at) == (
        payloads.TURN_1, "failed", 1796018498, 1796018498)
    assert turn.error is not None and turn.error.message == "boom"
    assert turn.error.codex_error_info == "internalServerError"
    assert [i.type for i in turn.items] == ["userMessage", "agentMessage", "commandExecution"]
    assert turn.model_extra is not None and turn.model_extra["itemsView"] == "summary"


def test_item_round_trips_unchanged() -> None:
    for raw in (payloads.user_message("hi ✓"), payloads.agent_message("yo"),
                payloads.command_item(), {"type": "brandNewItem", "id": "n", "x": [1]},
                {"type": "reasoning", "summary": []}):
        assert ThreadItem.model_validate(copy.deepcopy(raw)).as_dict() == raw


def test_turns_list_result() -> None:
    turns = [payloads.turn(payloads.TURN_1), payloads.turn(payloads.TURN_2)]
    page = {"data": turns, "nextCursor": "abc", "backwardsCursor": None}
    result = ThreadTurnsListResponse.model_validate(page)
    assert [t.id for t in result.data] == [payloads.TURN_1, payloads.TURN_2]
    assert result.next_cursor == "abc" and result.backwards_cursor is None
    # a non-object entry is skipped, the rest kept
    assert len(ThreadTurnsListResponse.model_validate({"data": [5, turns[0]]}).data) == 1


def test_items_list_result() -> None:
    entries = [payloads.item_entry(payloads.TURN_1, payloads.user_message("a")),
               payloads.item_entry(payloads.TURN_1, payloads.agent_message("b")),
               {"turnId": payloads.TURN_1},  # no item: skipped
               "garbage"]
    result = ThreadItemsListResponse.model_validate({"data": entries, "nextCursor": None})
    assert [(e.turn_id, e.item.type) for e in result.data] == [
        (payloads.TURN_1, "userMessage"), (payloads.TURN_1, "agentMessage")]
    assert result.data[0].started_at_ms == 1796018498000
    assert ThreadItemsListResponse.model_validate({}).data == []


def test_loaded_list_result() -> None:
    result = ThreadLoadedListResponse.model_validate(
        {"data": [payloads.USER_THREAD, 5, None, payloads.TITLE_THREAD], "nextCursor": None})
    assert result.data == [payloads.USER_THREAD, payloads.TITLE_THREAD]
    assert result.next_cursor is None


def test_turn_start_result() -> None:
    running = payloads.turn(payloads.TURN_2, status="inProgress", completed_at=None,
                            items_view="notLoaded")
    result = TurnStartResponse.model_validate({"turn": running})
    assert result.turn.id == payloads.TURN_2 and result.turn.status == "inProgress"
    assert result.turn.completed_at is None and result.turn.items == []


def test_initialize_result() -> None:
    result = InitializeResponse.model_validate({**payloads.INITIALIZE_RESULT,
                                              "somethingNew": True})
    assert result.platform_os == "linux" and result.codex_home == payloads.CODEX_HOME
    assert result.user_agent is not None and result.user_agent.startswith("codexbridge/")
    assert result.model_extra == {"somethingNew": True}


def test_resume_result_extras_are_tolerated() -> None:
    # thread/resume carries experimental fields (protocol-notes "Handshake"); the thread
    # inside parses as usual.
    result = ThreadReadResponse.model_validate(payloads.resume_result(payloads.thread()))
    assert result.thread.id == payloads.USER_THREAD
    assert result.model_extra is not None and "initialTurnsPage" in result.model_extra


def test_thread_read_without_thread_is_an_error() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        ThreadReadResponse.model_validate({"readState": None})
    with pytest.raises(ValidationError):
        ThreadReadResponse.model_validate({"thread": "nope"})
