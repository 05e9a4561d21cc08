"""A conversation's timeline (messages/timeline.py), read from the records that exist:
who asked whom in order, the answers and their latency, every state change, and a record
that no longer reads shown as damaged — never the end of the timeline."""

from __future__ import annotations

import json

import pytest

from codexbridge.errors import UsageError
from codexbridge.messages.conversations import Conversations
from codexbridge.messages.records import DeliveryStore
from codexbridge.messages.timeline import (
    RECORD_GRACE,
    WHOLE_MAX,
    Agent,
    Kind,
    Reader,
    whole_text,
)
from tests.support.exchange import CLAUDE_ANSWER, CODEX_ANSWER, CODEX_ON_IT, exchange


def said(conv: str) -> list[tuple[str, str | None, str | None, str | None]]:
    """The requests, answers and notices in order: kind, who, to, delivery."""
    timeline = Reader().timeline(conv)
    assert timeline is not None
    return [(str(e.kind), e.who and str(e.who), e.to and str(e.to), e.delivery)
            for e in timeline.events if e.kind not in (Kind.STATE, Kind.TOKENS)]


def test_both_ways_in_order_with_asker_answerer_and_latency() -> None:
    x = exchange()
    assert said(x.conv) == [
        ("asked", "claude", "codex", "req_1_aaaaaa"),
        ("asked", "codex", "claude", "req_2_bbbbbb"),
        ("answered", "codex", "claude", "req_1_aaaaaa"),
        ("answered", "claude", "codex", "req_3_cccccc"),
    ]
    timeline = Reader().timeline(x.conv)
    assert timeline is not None and timeline.record is not None
    events = {(e.kind, e.in_reply_to): e for e in timeline.events}
    codex = events[(Kind.ANSWERED, "req_1_aaaaaa")]
    assert codex.latency == pytest.approx(3.0) and codex.text == "MOCK REPLY: these"
    claude = events[(Kind.ANSWERED, "req_2_bbbbbb")]
    assert claude.latency == pytest.approx(4.0) and claude.whole is not None
    assert whole_text(claude) == "CLAUDE ANSWER: is the branch cut?"
    asked = [(e.hop, e.max_hops) for e in timeline.events if e.kind is Kind.ASKED]
    assert asked == [(1, 40), (2, 40)]
    # every step of every record, in time order
    states = [(e.delivery, str(e.state)) for e in timeline.events if e.kind is Kind.STATE]
    assert states[:3] == [("req_1_aaaaaa", "queued"), ("req_1_aaaaaa", "delivering"),
                          ("req_1_aaaaaa", "awaiting-reply")]
    assert len(states) == 11
    assert [e.at for e in timeline.events] == sorted(e.at for e in timeline.events)
    # one line of JSON each, the enums as their values
    line = json.loads(json.dumps(codex.as_json()))
    assert line["kind"] == "answered" and line["who"] == "codex" and line["to"] == "claude"


def test_claudes_answer_is_one_event_whichever_record_says_it_first() -> None:
    """Claude's answer reads from the request (answered_at) until its own record is
    written; a follower must not show it twice."""
    x = exchange()
    before = Reader().timeline(x.conv)
    assert before is not None
    (x.store.root / "req_3_cccccc.json").unlink()
    early = Reader().timeline(x.conv)
    assert early is not None
    [first] = [e for e in early.events if e.kind is Kind.ANSWERED and e.who is Agent.CLAUDE]
    [later] = [e for e in before.events if e.kind is Kind.ANSWERED and e.who is Agent.CLAUDE]
    assert first.key == later.key and first.latency == pytest.approx(4.0)


def test_a_damaged_record_is_shown_as_damaged_and_the_rest_still_shows() -> None:
    x = exchange()
    (x.store.root / "req_2_bbbbbb.json").write_text("{not json")
    timeline = Reader().timeline(x.conv)
    assert timeline is not None
    [bad] = [e for e in timeline.events if e.kind is Kind.DAMAGED]
    assert bad.delivery == "req_2_bbbbbb" and bad.hop == 2 and "req_2_bbbbbb.json" in str(
        bad.reason)
    assert ("asked", "claude", "codex", "req_1_aaaaaa") in said(x.conv)


def test_a_damaged_conversation_file_still_shows_its_deliveries() -> None:
    x = exchange()
    x.convs.path(x.conv).write_text("[")
    timeline = Reader().timeline(x.conv)
    assert timeline is not None and timeline.record is None
    assert timeline.damaged and "does not read" in timeline.damaged
    assert [e.delivery for e in timeline.events if e.kind is Kind.ASKED] == [
        "req_1_aaaaaa", "req_2_bbbbbb"]


def test_mail_with_no_record_shows_as_its_hop_once_its_record_cannot_be_coming() -> None:
    conv, convs = "conv_mail1", Conversations()
    hop = convs.spend_hop(conv, {"direction": "codex→claude", "delivery": "req_9_zzzzzz",
                                 "mailbox": "project"}, 40, words="fyi: tests pass")
    record = convs.get(conv)
    assert record is not None and hop.n == 1
    at = record.hops[0].at
    young = Reader().timeline(conv, now=at + RECORD_GRACE / 2)
    assert young is not None and young.events == []  # its record may be on its way
    old = Reader().timeline(conv, now=at + RECORD_GRACE + 1)
    assert old is not None
    [mail] = old.events
    assert (mail.kind, mail.who, mail.to, mail.hop) == (Kind.ASKED, Agent.CODEX,
                                                        Agent.CLAUDE, 1)
    assert mail.reason and "mailbox" in mail.reason


def test_unknown_invalid_and_listing() -> None:
    assert Reader().timeline("conv_nothere") is None
    with pytest.raises(UsageError, match="not a conversation id"):
        Reader().timeline("../etc/passwd")
    assert Reader().conversations() == []
    exchange("conv_older", t0=1_000.0)
    exchange("conv_newer")
    # the most recently active first (the hop spent last)
    assert [c.conversation for c in Reader().conversations()][:2] == ["conv_newer", "conv_older"]


def test_a_conversation_only_deliveries_name_is_still_found() -> None:
    x = exchange("conv_orphan1")
    x.convs.path(x.conv).unlink()
    assert "conv_orphan1" in [c.conversation for c in Reader().conversations()]
    timeline = Reader().timeline(x.conv)
    assert timeline is not None and timeline.record is None and not timeline.damaged


def test_a_whole_text_is_bounded_and_says_where_the_rest_is() -> None:
    x = exchange()
    store = DeliveryStore()
    (store.root / "req_1_aaaaaa.reply").write_text("x" * (WHOLE_MAX + 10))
    store.update("req_1_aaaaaa", lambda r: setattr(r, "reply_bytes", WHOLE_MAX + 10))
    timeline = Reader().timeline(x.conv)
    assert timeline is not None
    [codex] = [e for e in timeline.events if e.kind is Kind.ANSWERED and e.who is Agent.CODEX]
    assert codex.cut and codex.whole is not None
    text = whole_text(codex)
    assert len(text) < WHOLE_MAX + 200 and text.endswith(f"(the rest is in {codex.whole})")


def test_each_turns_tokens_and_the_running_total() -> None:
    """What each bridged turn cost shows once it is noted on its record (Claude's after
    its answer), with the conversation's total so far — the events' own sum, which is
    the conversation record's total."""
    x = exchange()
    timeline = Reader().timeline(x.conv)
    assert timeline is not None and timeline.record is not None
    costs = [(e.delivery, e.who, e.tokens, e.total) for e in timeline.events
             if e.kind is Kind.TOKENS]
    assert costs == [
        ("req_1_aaaaaa", Agent.CODEX, CODEX_ANSWER, CODEX_ANSWER),
        ("req_2_bbbbbb", Agent.CLAUDE, CLAUDE_ANSWER, CODEX_ANSWER + CLAUDE_ANSWER),
        ("req_3_cccccc", Agent.CODEX, CODEX_ON_IT, CODEX_ANSWER + CLAUDE_ANSWER + CODEX_ON_IT)]
    assert timeline.record.tokens == costs[-1][3]
    assert timeline.header()["tokens"] == {"input": 60, "cached": 20, "output": 20}
    [line] = [e.as_json() for e in timeline.events if e.kind is Kind.TOKENS][:1]
    assert line["tokens"] == {"input": 20, "cached": 0, "output": 10} == line["total"]


def test_a_reader_read_again_parses_only_what_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A follower reads every half second: a state home with a week of records must not
    be parsed whole each time."""
    x = exchange()
    reader = Reader()
    reader.timeline(x.conv)
    parsed: list[str] = []
    read = DeliveryStore.read

    def counting(store: DeliveryStore, delivery_id: str) -> object:
        parsed.append(delivery_id)
        return read(store, delivery_id)

    monkeypatch.setattr(DeliveryStore, "read", counting)
    reader.timeline(x.conv)
    assert parsed == []
    x.store.update("req_1_aaaaaa", lambda r: setattr(r, "reason", "looked at again"))
    parsed.clear()  # (the update read it too)
    again = reader.timeline(x.conv)
    assert parsed == ["req_1_aaaaaa"] and again is not None
