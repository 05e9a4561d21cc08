"""A two-way exchange as its records leave it on disk, for the timeline's tests
(tests/unit/messages/test_timeline.py, tests/unit/cli/test_log.py): written through
the engine's own stores, with times the test chooses.

    hop 1  Claude asks Codex (req_1)      Codex answers 3 s later
    hop 2  Codex asks Claude (req_2)      Claude answers (req_3, into the Codex thread)

Tokens (in/cached/out): Codex's turn on req_1 20/0/10, Claude's answer 30/20/5, Codex's
turn on that answer 10/0/5 — on the records and in the conversation's total.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from codexbridge.messages.conversations import Conversations
from codexbridge.messages.records import (
    Delivery,
    DeliveryState,
    DeliveryStore,
    Step,
    ToClaude,
    ToCodex,
    Tokens,
)

THREAD = "019a0000-0000-7000-8000-000000000001"
CODEX_ANSWER, CLAUDE_ANSWER, CODEX_ON_IT = Tokens(20, 0, 10), Tokens(30, 20, 5), Tokens(10, 0, 5)


@dataclass
class Exchange:
    conv: str
    t0: float
    store: DeliveryStore
    convs: Conversations


def steps(t0: float, *states: tuple[float, str]) -> list[Step]:
    return [{"state": state, "at": t0 + dt} for dt, state in states]


def exchange(conv: str = "conv_abc123", *, t0: float | None = None,
             question: str = "which tests cover auth?", answer: str = "MOCK REPLY: these",
             back: str = "is the branch cut?") -> Exchange:
    """Both requests and Claude's answer, as the records hold them once all is done."""
    t0 = time.time() - 100 if t0 is None else t0
    store, convs = DeliveryStore(), Conversations()
    convs.spend_hop(conv, {"direction": "claude→codex", "delivery": "req_1_aaaaaa",
                           "thread": THREAD}, 40, words=question)
    convs.spend_hop(conv, {"direction": "codex→claude", "delivery": "req_2_bbbbbb",
                           "thread": THREAD, "mailbox": "project"}, 40, words=back)
    records: list[Delivery] = [
        ToCodex(id="req_1_aaaaaa", thread_id=THREAD, conversation=conv, hop=1, max_hops=40,
                created_at=t0, sender="claude-code", text_preview=question,
                reply_preview=answer, reply_bytes=len(answer), state=DeliveryState.DELIVERED,
                tokens=CODEX_ANSWER,
                history=steps(t0, (0, "queued"), (0.5, "delivering"), (1, "awaiting-reply"),
                              (3, "delivered"))),
        ToClaude(id="req_2_bbbbbb", thread_id=THREAD, conversation=conv, hop=2,
                 max_hops=40, created_at=t0 + 1, sender="codex", mailbox="project",
                 text_preview=back, reply_preview=f"CLAUDE ANSWER: {back}",
                 answered_at=t0 + 5, state=DeliveryState.DELIVERED, tokens=CLAUDE_ANSWER,
                 history=steps(t0, (1, "queued"), (2, "delivering"), (2.5, "awaiting-reply"),
                               (6, "delivered"))),
        ToCodex(id="req_3_cccccc", thread_id=THREAD, conversation=conv, hop=0, max_hops=40,
                created_at=t0 + 5, sender="claude-code", in_reply_to="req_2_bbbbbb",
                text_preview=f"CLAUDE ANSWER: {back}", state=DeliveryState.DELIVERED,
                tokens=CODEX_ON_IT,
                history=steps(t0, (5, "queued"), (5.5, "delivering"), (6, "delivered"))),
    ]
    for record in records:
        store.save(record)
        if record.tokens is not None:
            convs.add_tokens(conv, record.tokens)
    (store.root / "req_1_aaaaaa.text").write_text(question)
    (store.root / "req_3_cccccc.text").write_text(f"CLAUDE ANSWER: {back}")
    return Exchange(conv, t0, store, convs)
