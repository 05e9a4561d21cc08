"""Claude's answers going back (messages/answers.py): each request answered once, and a turn
that ends with nothing to say tells the asking thread instead of leaving it waiting."""

from __future__ import annotations

import pytest

from codexbridge.messages import courier_link, handling
from codexbridge.messages.answers import answer_pending
from codexbridge.messages.records import DeliveryState, DeliveryStore, ToClaude, ToCodex


@pytest.fixture
def handed(monkeypatch: pytest.MonkeyPatch) -> DeliveryStore:
    monkeypatch.setattr(courier_link, "ensure", lambda ids: None)  # no courier process
    store = DeliveryStore()
    rec = ToClaude(id="req_5_x", conversation="conv_c", hop=1, max_hops=4, thread_id="T1",
                   mailbox="box")
    rec.queue()
    rec.await_reply()
    store.save(rec)
    handling.note("sess", "box", [{"id": "m1", "request": "req_5_x", "conversation": "conv_c",
                                   "expect_reply": {"thread": "T1"}}])
    return store


def replies_to(store: DeliveryStore, request: str) -> list[ToCodex]:
    return [d for d in store.recent(100) if isinstance(d, ToCodex) and d.in_reply_to == request]


def test_the_answer_goes_back_once(handed: DeliveryStore) -> None:
    assert answer_pending("sess", "CLAUDE ANSWER to req_5_x: yes") == 1
    assert answer_pending("sess", "again") == 0  # answered already
    [reply] = replies_to(handed, "req_5_x")
    assert reply.thread_id == "T1" and not reply.notice


def test_a_turn_without_a_final_message_tells_the_asking_thread(handed: DeliveryStore) -> None:
    assert answer_pending("sess", None) == 1
    request = handed.get("req_5_x")
    assert request is not None and request.state is DeliveryState.FAILED
    [notice] = replies_to(handed, "req_5_x")
    assert notice.notice and notice.thread_id == "T1"
    assert "without a final message" in handed.text_path(notice.id).read_text()
