"""A Codex request is answered only by the Claude turn that took it in (issue 24, item 2).

The human presses Esc in Claude's TUI — at a permission prompt, or while Claude answers —
and Claude Code runs no Stop hook for that turn (measured on 2.1.332: the transcript gets
a `user` record "[Request interrupted by user]" / "… for tool use]" and nothing else).
The next stop belongs to the next turn, about something else ("never mind, what is
2+2?" → "4"): its words must never go to Codex as the answer. The asking thread is told
that the human interrupted the turn — by the courier watching the session (at once) or
at that next stop, whichever sees it first, once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codexbridge.claude import files
from codexbridge.messages import courier_link, handling
from codexbridge.messages.answers import INTERRUPTED, answer_pending, watch_interrupt
from codexbridge.messages.records import DeliveryState, DeliveryStore, ToClaude, ToCodex

# The records as Claude Code 2.1.332 writes them (tests/journeys/test_human_in_claude_…
# and the spike measured them): live mail is a `user` record of origin `peer`; Esc at a
# permission prompt a rejected tool result and then the marker; Esc mid-answer the marker.
PEER = {"type": "user", "isMeta": True, "origin": {"kind": "peer", "msg_id": "f00"},
        "message": {"role": "user", "content": "Another Claude session sent a message:\n"
                    "… id mail-1 …\n[codexbridge x] request req_1_a"}}
TOOL_USE = {"type": "assistant", "message": {"role": "assistant", "content": [
    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "x"}}]}}
REJECTED = {"type": "user", "toolUseResult": "User rejected tool use", "message": {
    "role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                 "is_error": True, "content": "The user doesn't want to "
                                 "proceed with this tool use."}]}}
ESC_AT_PROMPT = {"type": "user", "message": {"role": "user", "content": [
    {"type": "text", "text": "[Request interrupted by user for tool use]"}]}}
ESC_MID_ANSWER = {"type": "user", "message": {"role": "user", "content": [
    {"type": "text", "text": "[Request interrupted by user]"}]}}
HUMAN_NEXT = {"type": "user", "origin": {"kind": "human"},
              "message": {"role": "user", "content": "never mind, what is 2+2?"}}


def write(path: Path, *records: dict[str, object]) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, separators=(",", ":")) + "\n")


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    write(path, {"type": "user", "origin": {"kind": "human"},
                 "message": {"role": "user", "content": "an earlier turn"}},
          ESC_MID_ANSWER)  # an earlier turn's Esc is not this request's
    return path


@pytest.fixture
def handed(monkeypatch: pytest.MonkeyPatch, transcript: Path) -> DeliveryStore:
    """Codex's request req_1_a, noted as handed to session `sess` in `transcript`."""
    monkeypatch.setattr(courier_link, "ensure", lambda ids: None)  # no courier process
    store = DeliveryStore()
    rec = ToClaude(id="req_1_a", conversation="conv_c", hop=1, max_hops=4, thread_id="T1",
                   mailbox="box", session_id="sess", claude_pid=1)
    rec.queue()
    rec.await_reply()
    store.save(rec)
    handling.note("sess", "box", [{"id": "mail-1", "request": "req_1_a",
                                   "conversation": "conv_c", "expect_reply": {"thread": "T1"}}],
                  str(transcript), transcript.stat().st_size)
    return store


def replies_to(store: DeliveryStore, request: str) -> list[ToCodex]:
    return [d for d in store.recent(100) if isinstance(d, ToCodex) and d.in_reply_to == request]


@pytest.mark.parametrize("esc", [[TOOL_USE, REJECTED, ESC_AT_PROMPT], [ESC_MID_ANSWER]],
                         ids=["at-permission-prompt", "mid-answer"])
def test_the_next_turns_words_never_answer_an_interrupted_request(
        handed: DeliveryStore, transcript: Path, esc: list[dict[str, object]]) -> None:
    write(transcript, PEER, *esc, HUMAN_NEXT)
    # the next stop is the 2+2 turn's — even were its words to name the request
    assert answer_pending("sess", "4 (and req_1_a)") == 1  # one: the notice
    [notice] = replies_to(handed, "req_1_a")
    assert notice.notice and notice.thread_id == "T1"
    text = handed.text_path(notice.id).read_text()
    assert INTERRUPTED in text and "req_1_a" in text and "4 (and" not in text
    assert "talk send --in-reply-to req_1_a" in text  # what works from here
    request = handed.get("req_1_a")
    assert request is not None and request.state is DeliveryState.FAILED
    assert INTERRUPTED in str(request.reason)
    assert handling.current_marker("sess") is None
    assert answer_pending("sess", "later words") == 0  # never twice


def test_the_courier_tells_the_asking_thread_at_once_and_the_stop_then_does_nothing(
        handed: DeliveryStore, transcript: Path) -> None:
    write(transcript, PEER)
    running = handed.get("req_1_a")
    assert running is not None and watch_interrupt(running) is None  # the turn still runs
    write(transcript, TOOL_USE, REJECTED, ESC_AT_PROMPT)
    notice = watch_interrupt(running)
    assert notice is not None
    assert [d.id for d in replies_to(handed, "req_1_a")] == [notice]
    done = handed.get("req_1_a")
    assert done is not None and done.state is DeliveryState.FAILED
    assert not done.needs_courier  # the courier stops watching
    write(transcript, HUMAN_NEXT)
    assert answer_pending("sess", "4") == 0  # the 2+2 turn's stop: nothing to send
    assert [d.id for d in replies_to(handed, "req_1_a")] == [notice]


def test_an_uninterrupted_turn_still_answers(handed: DeliveryStore, transcript: Path) -> None:
    write(transcript, PEER, {"type": "assistant", "message": {"content": "the answer"}})
    running = handed.get("req_1_a")
    assert running is not None and watch_interrupt(running) is None
    assert answer_pending("sess", "CLAUDE ANSWER to req_1_a: yes") == 1
    [reply] = replies_to(handed, "req_1_a")
    assert not reply.notice
    assert handed.text_path(reply.id).read_text() == "CLAUDE ANSWER to req_1_a: yes"


def test_mail_still_queued_behind_an_interrupted_turn_is_not_cut(
        handed: DeliveryStore, transcript: Path) -> None:
    # The human interrupts their own turn while the mail waits in Claude Code's queue:
    # the turn that takes the mail in is a later one, and it answers.
    write(transcript, {"type": "queue-operation", "operation": "enqueue",
                       "content": "… id mail-1 …"}, ESC_MID_ANSWER)
    running = handed.get("req_1_a")
    assert running is not None and watch_interrupt(running) is None
    assert files.turn_of(str(transcript), 0, "mail-1") == files.Turn.NOT_YET
    write(transcript, PEER)
    assert answer_pending("sess", "CLAUDE ANSWER to req_1_a: yes") == 1
    [reply] = replies_to(handed, "req_1_a")
    assert not reply.notice


def test_words_that_quote_the_marker_are_not_an_interrupt(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    quoting = {"type": "user", "toolUseResult": {"stdout": "x"}, "message": {
        "role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                     "content": "[Request interrupted by user]"}]}}
    peer_quoting = {**PEER, "message": {"role": "user",
                                        "content": "[Request interrupted by user] mail-2"}}
    write(path, PEER, quoting, peer_quoting)
    assert files.turn_of(str(path), 0, "mail-1") == files.Turn.TAKEN_IN
