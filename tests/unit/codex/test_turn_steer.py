"""The human in the Codex TUI during a bridge turn (issue 24, items 1, 3, 4): what the
tracker sees of a steer, and what the asker is told of a steered, interrupted or
unattended turn, and of a thread codex unloaded (docs/conversations.md, "The human
steers, interrupts, quits")."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from codexbridge.codex import threads
from codexbridge.codex.follow import ApprovalRecord, SayResult
from codexbridge.codex.protocol.enums import ApprovalOutcome, TurnOutcome
from codexbridge.codex.protocol.envelopes import Notification
from codexbridge.codex.protocol.turn import Added, AgentMessage, Completed, TurnTracker
from codexbridge.errors import NoThreadError, RpcError
from codexbridge.messages import courier, frame
from codexbridge.messages.records import DeliveryState, DeliveryStore, ToClaude, ToCodex
from tests.support import payloads

T, U = "thread-1", "turn-1"
OURS = "req_1_aaaaaa"
TUI_CLIENT = "7d0f63f7-16cc-4bd3-b29e-f3e08f528117"  # the TUI's own clientId (measured)


def user_item(event: str, text: str, client_id: str | None, item: str) -> Notification:
    return Notification(event, {"threadId": T, "turnId": U, "item": {
        "type": "userMessage", "id": item, "clientId": client_id,
        "content": [{"type": "text", "text": text, "text_elements": []}]}})


def steered_turn(words: str = "human steers: never mind, what is 2+2?") -> list[Notification]:
    """What codex 0.169.0 and 0.171.0 send when the human presses Enter in the TUI while
    our queued turn runs (measured: docs/protocol-notes.md, "The human's keys")."""
    return [
        Notification("turn/started", {"threadId": T, "turn": {"id": U}}),
        user_item("item/started", "our question", OURS, "u1"),
        user_item("item/completed", "our question", OURS, "u1"),
        user_item("item/started", words, TUI_CLIENT, "u2"),
        user_item("item/completed", words, TUI_CLIENT, "u2"),
        Notification("item/completed", {"threadId": T, "turnId": U, "item": {
            "type": "agentMessage", "id": "m1", "text": f"MOCK REPLY: {words}"}}),
        Notification("turn/completed", {"threadId": T, "turn": {
            "id": U, "status": "completed", "items": [], "error": None}}),
    ]


def test_the_tracker_sees_a_user_message_added_to_our_turn_once() -> None:
    tr = TurnTracker(T, client_id=OURS)
    events = [e for env in steered_turn() for e in tr.feed(env)]
    added = [e for e in events if isinstance(e, Added)]
    assert [(a.text, a.client_id) for a in added] == [
        ("human steers: never mind, what is 2+2?", TUI_CLIENT)]
    assert tr.added == added
    assert any(isinstance(e, AgentMessage) for e in events)
    assert isinstance(events[-1], Completed)


def test_a_turn_with_only_our_message_has_nothing_added() -> None:
    tr = TurnTracker(T, client_id=OURS)
    for env in [e for e in steered_turn() if "u2" not in str(e.params)]:
        tr.feed(env)
    assert tr.added == [] and tr.completed is not None


def test_bound_by_id_our_message_is_told_by_its_own_client_id_or_else_the_first() -> None:
    # A steered `talk say --steer`: bound by the answer's turn id; ours has our clientId.
    tr = TurnTracker(T)
    tr.own_client_id = OURS
    tr.bind(U)
    for env in steered_turn()[1:]:
        tr.feed(env)
    assert [a.text for a in tr.added] == ["human steers: never mind, what is 2+2?"]
    # Followed by its id alone (no clientId known): the turn's first message is ours.
    tr = TurnTracker(T)
    tr.bind(U)
    for env in steered_turn()[1:]:
        tr.feed(env)
    assert [a.client_id for a in tr.added] == [TUI_CLIENT]


def test_a_follower_that_joined_late_reads_the_steer_from_the_thread_once() -> None:
    """The courier starts after the turn began (or takes over): the turn's userMessage
    items listed by the thread tell it what was added; the live notification that may
    follow for the same message is not counted again."""
    tr = TurnTracker(T, client_id=OURS)
    tr.bind(U)
    listed = [{"type": "userMessage", "id": "u1", "clientId": OURS,
               "content": [{"type": "text", "text": "our question"}]},
              {"type": "userMessage", "id": "u2", "clientId": TUI_CLIENT,
               "content": [{"type": "text", "text": "the human's words"},
                           {"type": "image", "url": "x"}]}]
    events = tr.note_user_items(listed)
    assert [(a.text, a.client_id) for a in events if isinstance(a, Added)] == [
        ("the human's words\n[image]", TUI_CLIENT)]
    for env in steered_turn("the human's words\n[image]"):
        tr.feed(env)
    assert len(tr.added) == 1


# -- what the asker is told ------------------------------------------------------------

@pytest.fixture
def told(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    said: list[str] = []

    def notify(record: ToCodex, text: str, cost: object = None) -> str:
        said.append(text)
        return f"mail_{len(said)}"

    monkeypatch.setattr(courier, "_notify", notify)
    return said


def stored(tmp_path: Path, **kw: Any) -> DeliveryStore:
    store = DeliveryStore(tmp_path / "d")
    d = ToCodex(id=OURS, thread_id=T, reply_to="web", conversation="conv_1", turn_id=U, **kw)
    d.queue()
    d.take()
    store.save(d)
    store.text_path(OURS).write_text("our question", encoding="utf-8")
    return store


def result(status: TurnOutcome, reply: str, added: tuple[str, ...] = ()) -> SayResult:
    return SayResult(T, U, status, reply, [], None, added=added)


def test_a_steered_turn_is_not_handed_to_the_asker_as_the_answer_to_its_request(
        tmp_path: Path, told: list[str]) -> None:
    store = stored(tmp_path)
    words = "never mind, what is 2+2?"
    done = courier.finish(store, OURS, result(TurnOutcome.COMPLETED, "4", (words,)))
    assert done.state is DeliveryState.DELIVERED
    [mail] = told
    assert "a turn the human steered" in mail
    assert f"  | {words}" in mail  # the human's words, quoted
    assert "the human typed into the Codex TUI and pressed Enter" in mail
    assert "may answer those words rather than your request" in mail
    assert f"talk send --thread {T}" in mail
    assert done.reason is not None and "steered" in done.reason


def test_words_another_agent_steered_in_are_named_as_that(tmp_path: Path,
                                                        told: list[str]) -> None:
    store = stored(tmp_path)
    framed = frame.frame(["from Claude Code — added to this turn"], "also check tests",
                         "end")
    courier.finish(store, OURS, result(TurnOutcome.COMPLETED, "ok", (framed,)))
    [mail] = told
    assert "another agent added to it through codexbridge" in mail
    assert "  | also check tests" in mail and "[codexbridge" not in mail.split("Added")[1]


def test_an_unsteered_reply_reads_as_before(tmp_path: Path, told: list[str]) -> None:
    courier.finish(stored(tmp_path), OURS, result(TurnOutcome.COMPLETED, "the answer"))
    [mail] = told
    assert mail.startswith(f"Reply from Codex (thread {T}) to your request {OURS}, "
                           "conversation conv_1:\n\nthe answer")


def test_the_human_interrupting_the_askers_turn_is_named_with_what_to_do(
        tmp_path: Path, told: list[str]) -> None:
    done = courier.finish(stored(tmp_path), OURS,
                          result(TurnOutcome.INTERRUPTED, "MOCK REP"))
    [mail] = told
    assert mail.startswith(f"INTERRUPTED: your request {OURS} to Codex (thread {T}) "
                           "reached the thread")
    assert "the human (Esc in the Codex TUI)" in mail and "'MOCK REP'" in mail
    assert "do not resend on your own; ask the user" in mail
    assert "DELIVERY FAILED" not in mail and "did not" not in mail
    assert done.state is DeliveryState.FAILED and "interrupted" in (done.reason or "")


def test_claudes_answer_whose_codex_turn_was_interrupted_reached_the_thread(
        tmp_path: Path, told: list[str]) -> None:
    store = DeliveryStore(tmp_path / "d")
    request = ToClaude(id="req_0_codexq", thread_id=T, mailbox="web")
    request.queue()
    request.await_reply()
    store.save(request)
    answer = ToCodex(id=OURS, thread_id=T, reply_to="web", in_reply_to="req_0_codexq",
                     turn_id=U)
    answer.queue()
    answer.take()
    store.save(answer)
    done = courier.finish(store, OURS, result(TurnOutcome.INTERRUPTED, ""))
    [mail] = told
    assert f"reached thread {T} — it is in the thread" in mail
    assert "did not reach" not in mail
    assert "Do not send the answer again" in mail
    assert done.state is DeliveryState.DELIVERED
    got = store.get("req_0_codexq")
    assert got is not None and got.state is DeliveryState.DELIVERED


def test_an_app_server_that_went_away_is_still_a_failure_to_resend_after_checking(
        tmp_path: Path, told: list[str]) -> None:
    store = stored(tmp_path, server_lost_at=1.0)
    done = courier.finish(store, OURS, result(TurnOutcome.INTERRUPTED, ""))
    assert told[0].startswith("DELIVERY FAILED") and "went away" in told[0]
    assert done.state is DeliveryState.FAILED


def test_an_approval_waiting_on_an_unattended_thread_is_told_at_once(
        tmp_path: Path, told: list[str]) -> None:
    store = stored(tmp_path, unattended=True)
    record = store.get(OURS)
    assert record is not None
    approval = ApprovalRecord(7, "item/commandExecution/requestApproval",
                              "run `touch f`", ApprovalOutcome.WAITING)
    courier._tell_unattended(record, approval, 300)
    [mail] = told
    assert "asks for approval: run `touch f`" in mail
    assert "No Codex TUI is attached" in mail and "in 300 s" in mail
    assert f"codex resume {T}" in mail


# -- a thread codex unloaded -----------------------------------------------------------

class FakeRpc:
    """thread/loaded/list empty (the TUI was quit, the thread unloaded); thread/list
    answers with what codex keeps on disk."""

    def __init__(self, stored: list[dict[str, Any]], refuse_list: bool = False) -> None:
        self.stored = stored
        self.refuse_list = refuse_list

    async def request(self, method: str, params: Any = None, *,
                      timeout: float | None = None) -> Any:
        if method == "thread/loaded/list":
            return {"data": [], "nextCursor": None}
        if method == "thread/list":
            if self.refuse_list:
                raise RpcError(-32601, "method not found")
            return {"data": self.stored, "nextCursor": None}
        raise AssertionError(method)


def test_no_loaded_thread_names_the_projects_last_one_and_what_reaches_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    project = str(tmp_path)
    monkeypatch.chdir(project)
    old = payloads.thread("019b-old", cwd=project, updated_at=1,
                          status={"type": "notLoaded"})
    last = payloads.thread("019b-last", cwd=project, updated_at=2, name="review",
                           status={"type": "notLoaded"})
    elsewhere = payloads.thread("019b-other", cwd="/elsewhere", updated_at=3,
                                status={"type": "notLoaded"})
    with pytest.raises(NoThreadError) as caught:
        asyncio.run(threads.find_target(FakeRpc([old, last, elsewhere]), None))  # type: ignore[arg-type]
    msg = caught.value.message
    assert "last thread is 019b-last (review)" in msg
    assert "`codexbridge talk send --thread 019b-last TEXT` resumes it" in msg
    assert f"`codex resume --last` in {project}" in msg
    assert "would start a new thread instead" in msg
    assert caught.value.retryable is False
    assert caught.value.details["last_thread"]["id"] == "019b-last"  # type: ignore[index]


def test_with_no_history_the_error_stays_the_plain_one(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for rpc in (FakeRpc([]), FakeRpc([], refuse_list=True)):
        with pytest.raises(NoThreadError) as caught:
            asyncio.run(threads.find_target(rpc, None))  # type: ignore[arg-type]
        assert "no user thread is loaded" in caught.value.message
