"""Following one turn (docs/protocol-notes.md, "Wire"): early events buffered, bounded, replayed."""

from __future__ import annotations

from typing import Any

from codexbridge.codex.protocol.envelopes import Notification, ServerRequest
from codexbridge.codex.protocol.turn import (
    BUFFER_LIMIT,
    AgentMessage,
    Approval,
    Completed,
    Delta,
    Resolved,
    TurnTracker,
    Warning,
)

T, U = "thread-1", "turn-1"


def delta(text: str, *, thread: str = T, turn: str = U, item: str = "msg_1") -> Notification:
    return Notification("item/agentMessage/delta",
                        {"threadId": thread, "turnId": turn, "itemId": item, "delta": text})


def agent_done(text: str, *, thread: str = T, turn: str = U, item: str = "msg_1"
               ) -> Notification:
    return Notification("item/completed", {
        "threadId": thread, "turnId": turn, "completedAtMs": 1,
        "item": {"type": "agentMessage", "id": item, "text": text}})


def turn_done(status: str = "completed", *, thread: str = T, turn: str = U,
              error: dict[str, Any] | None = None) -> Notification:
    return Notification("turn/completed", {
        "threadId": thread,
        "turn": {"id": turn, "status": status, "items": [], "error": error}})


def approval(rid: int = 0, *, thread: str = T, turn: str | None = U) -> ServerRequest:
    params: dict[str, Any] = {"threadId": thread, "itemId": "call_3", "command": "touch f"}
    if turn is not None:
        params["turnId"] = turn
    return ServerRequest(rid, "item/commandExecution/requestApproval", params)


def feed_all(tracker: TurnTracker, envs: list[Any]) -> list[Any]:
    out: list[Any] = []
    for env in envs:
        out.extend(tracker.feed(env))
    return out


def test_events_before_bind_are_buffered_then_replayed_in_order() -> None:
    tr = TurnTracker(T)
    early = [Notification("turn/started", {"threadId": T, "turn": {"id": U}}),
             delta("MOCK "), approval(0), delta("REPLY"), agent_done("MOCK REPLY")]
    assert feed_all(tr, early) == []
    events = tr.bind(U)
    assert events == [Delta("msg_1", "MOCK "), Approval(approval(0)), Delta("msg_1", "REPLY"),
                      AgentMessage("msg_1", "MOCK REPLY")]
    assert tr.turn_id == U
    # after bind, events flow straight through
    assert tr.feed(turn_done()) == [Completed("completed", None, turn_done().params["turn"])]
    assert tr.completed is not None and tr.reply == "MOCK REPLY"


def test_bind_replays_only_this_turns_events() -> None:
    tr = TurnTracker(T)
    feed_all(tr, [delta("old", turn="turn-0"), turn_done(turn="turn-0"), delta("new")])
    assert tr.bind(U) == [Delta("msg_1", "new")]
    assert tr.completed is None


def test_buffer_bound_counts_dropped_bytes_and_keeps_structural_events() -> None:
    tr = TurnTracker(T, buffer_limit=1000)
    chunk = "é" * 100  # 200 bytes in UTF-8: the bound is in bytes, not characters
    kept = [delta(chunk) for _ in range(5)]        # exactly 1000 bytes
    over = [delta(chunk) for _ in range(3)]        # 600 bytes over the bound
    structural = [approval(7), agent_done("full text"),
                  Notification("serverRequest/resolved", {"threadId": T, "requestId": 7}),
                  turn_done()]
    feed_all(tr, kept + over[:1] + structural[:2] + over[1:] + structural[2:])
    assert tr.dropped_bytes == 600
    events = tr.bind(U)
    assert [e for e in events if isinstance(e, Delta)] == [Delta("msg_1", chunk)] * 5
    assert [e for e in events if not isinstance(e, Delta)] == [
        Approval(approval(7)), AgentMessage("msg_1", "full text"), Resolved(7),
        Completed("completed", None, turn_done().params["turn"])]
    # the dropped deltas are recovered from item/completed
    assert tr.reply == "full text"


def test_default_bound_is_64_kib() -> None:
    assert BUFFER_LIMIT == 64 * 1024
    tr = TurnTracker(T)
    feed_all(tr, [delta("x" * 1024) for _ in range(70)])
    assert tr.dropped_bytes == 6 * 1024
    assert len(tr.bind(U)) == 64


def test_after_bind_nothing_is_dropped() -> None:
    tr = TurnTracker(T, buffer_limit=10)
    tr.bind(U)
    assert len(feed_all(tr, [delta("x" * 100) for _ in range(10)])) == 10
    assert tr.dropped_bytes == 0


def test_completion_is_matched_by_turn_id() -> None:
    tr = TurnTracker(T)
    tr.bind(U)
    assert tr.feed(turn_done(turn="someone-elses-turn")) == []
    assert tr.feed(turn_done(thread="other-thread")) == []
    assert tr.completed is None
    done = tr.feed(turn_done("interrupted", error={"message": "cancelled"}))
    assert done == [Completed("interrupted", {"message": "cancelled"},
                              turn_done("interrupted",
                                        error={"message": "cancelled"}).params["turn"])]
    assert tr.completed == done[0]


def test_failed_turn_carries_its_error() -> None:
    tr = TurnTracker(T)
    tr.bind(U)
    err = {"message": "boom", "codexErrorInfo": "internalServerError"}
    (ev,) = tr.feed(turn_done("failed", error=err))
    assert isinstance(ev, Completed) and ev.status == "failed" and ev.error == err


def test_events_of_other_threads_are_filtered_before_and_after_bind() -> None:
    tr = TurnTracker(T)
    other = [delta("nope", thread="t2"), approval(1, thread="t2"),
             Notification("serverRequest/resolved", {"threadId": "t2", "requestId": 1}),
             Notification("thread/status/changed", {"status": {"type": "idle"}})]
    assert feed_all(tr, other) == []
    assert tr.bind(U) == []
    assert feed_all(tr, other) == []


def test_deltas_and_items_of_another_turn_on_the_same_thread_are_ignored() -> None:
    tr = TurnTracker(T)
    tr.bind(U)
    assert feed_all(tr, [delta("x", turn="t-other"), agent_done("y", turn="t-other")]) == []
    assert tr.reply == ""


def test_legacy_approvals_use_conversation_id() -> None:
    tr = TurnTracker(T)
    tr.bind(U)
    legacy = ServerRequest(4, "execCommandApproval", {
        "conversationId": T, "callId": "c1", "command": ["touch", "f"], "cwd": "/w",
        "parsedCmd": []})
    assert tr.feed(legacy) == [Approval(legacy)]
    foreign = ServerRequest(5, "applyPatchApproval", {"conversationId": "t2", "callId": "c",
                                                      "fileChanges": {}})
    assert tr.feed(foreign) == []


def test_approval_for_another_turn_is_not_ours() -> None:
    tr = TurnTracker(T)
    tr.bind(U)
    assert tr.feed(approval(1, turn="other-turn")) == []
    # an approval without a turn id on our thread is ours
    assert tr.feed(approval(2, turn=None)) == [Approval(approval(2, turn=None))]


def test_server_request_resolved_passes_through() -> None:
    tr = TurnTracker(T)
    tr.bind(U)
    assert tr.feed(Notification("serverRequest/resolved",
                                {"threadId": T, "requestId": 0})) == [Resolved(0)]
    assert tr.feed(Notification("serverRequest/resolved",
                                {"threadId": T, "requestId": "r-9"})) == [Resolved("r-9")]
    assert tr.feed(Notification("serverRequest/resolved", {"threadId": T})) == []


def test_reply_is_the_last_agent_message() -> None:
    tr = TurnTracker(T)
    tr.bind(U)
    feed_all(tr, [delta("thinking", item="m1"), agent_done("first", item="m1"),
                  Notification("item/completed", {"threadId": T, "turnId": U,
                                                  "item": {"type": "commandExecution",
                                                           "id": "call_1"}}),
                  delta("fin", item="m2"), agent_done("final answer", item="m2")])
    assert tr.reply == "final answer"
    assert [m.text for m in tr.messages] == ["first", "final answer"]


def test_reply_falls_back_to_streamed_text_of_the_last_item() -> None:
    tr = TurnTracker(T)
    tr.bind(U)
    feed_all(tr, [delta("a", item="m1"), delta("b", item="m2"), delta("c", item="m2")])
    assert tr.reply == "bc"
    assert TurnTracker(T).reply == ""


def test_error_notification_becomes_a_warning_unless_retried() -> None:
    tr = TurnTracker(T)
    tr.bind(U)
    retry = Notification("error", {"threadId": T, "turnId": U, "willRetry": True,
                                   "error": {"message": "reconnecting"}})
    final = Notification("error", {"threadId": T, "turnId": U, "willRetry": False,
                                   "error": {"message": "stream disconnected"}})
    assert tr.feed(retry) == []
    assert tr.feed(final) == [Warning("stream disconnected")]


def test_other_notifications_of_the_turn_produce_no_events() -> None:
    tr = TurnTracker(T)
    tr.bind(U)
    assert feed_all(tr, [
        Notification("item/started", {"threadId": T, "turnId": U,
                                      "item": {"type": "agentMessage", "id": "m", "text": ""}}),
        Notification("thread/tokenUsage/updated", {"threadId": T, "turnId": U}),
        Notification("turn/started", {"threadId": T, "turn": {"id": U}}),
    ]) == []


def test_capture_limit_bounds_what_is_kept_but_not_what_streams() -> None:
    from codexbridge.codex.protocol.envelopes import Notification
    from codexbridge.codex.protocol.turn import Delta, TurnTracker

    t = TurnTracker("th", capture_limit=10)
    t.bind("tu")

    def delta(text: str) -> Notification:
        return Notification("item/agentMessage/delta",
                            {"threadId": "th", "turnId": "tu", "itemId": "m", "delta": text})

    assert t.feed(delta("12345678")) == [Delta("m", "12345678")]
    assert t.feed(delta("9abc")) == [Delta("m", "9abc")]  # streamed although not kept
    assert t.truncated and t.reply == "12345678"
    done = Notification("item/completed", {"threadId": "th", "turnId": "tu", "item": {
        "type": "agentMessage", "id": "m", "text": "héllo wörld, too long"}})
    [msg] = t.feed(done)
    assert msg.text.encode("utf-8") == "héllo wörl".encode()[:10] or len(
        msg.text.encode("utf-8")) <= 10
    assert t.reply == msg.text and t.reply_parts == {}
