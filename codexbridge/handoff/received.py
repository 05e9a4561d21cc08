"""What a Claude session already has from a Codex thread, so a handoff does not send it
again (docs/handoff.md, "What crosses").

Two kinds of turn in a thread went through the bridge, each a delivery record
(`conversation/records.py`, direction to-codex) whose id is also the turn's
userMessage `clientId`:

    a request    Claude's `talk send` / `codex_message_send`: when the turn completed,
                 the courier mailed Codex's final message to the asking session
                 (`reply_to`, `reply_mail_id`, `turn_id`, state delivered)
    an answer    Claude's answer to Codex's own request (`in_reply_to` = that request's
                 token), sent back as a turn

The target has them when its transcript holds the reply mail's id (every mail reaches
Claude under a header `· id <mail id>`, by the Stop hook, the watcher or live) or the
reply still waits in its mailbox (it arrives anyway); an answer is its own when its
transcript holds the request it answered (`request <token>` in the mail's envelope).
Then the request and the answer are words the target wrote, and the reply's final
agentMessage one it received: none of them crosses. Records expire with the delivery
store (7 days by default); older ones cross again, labelled.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..conversation.records import Delivery, DeliveryState, DeliveryStore, Direction

ALL_RECORDS = 1_000_000


@dataclass(frozen=True)
class Received:
    """Per thread: what the target already has."""

    client_ids: frozenset[str] = frozenset()  # userMessages it wrote (its requests, answers)
    reply_turns: frozenset[str] = frozenset()  # turns whose final agentMessage it got as mail


@dataclass
class _Found:
    client_ids: set[str] = field(default_factory=set)
    reply_turns: set[str] = field(default_factory=set)


def _needles(records: Iterable[Delivery], mailbox: str | None) -> dict[str, Delivery]:
    """The string whose presence in the target's transcript proves it has the record's
    turn: the reply mail's id (a request it asked), or the request token (an answer)."""
    out: dict[str, Delivery] = {}
    for r in records:
        if r.direction is not Direction.TO_CODEX or not r.thread_id:
            continue
        if r.in_reply_to:
            out[r.in_reply_to] = r
        elif (r.reply_mail_id and r.turn_id and r.state is DeliveryState.DELIVERED
              and mailbox is not None and r.reply_to == mailbox):
            out[r.reply_mail_id] = r
    return out


def seen_in(path: str | None, needles: Iterable[str]) -> set[str]:
    """Which of `needles` the file holds (line by line: a transcript can be large)."""
    left = {n.encode("utf-8"): n for n in needles}
    found: set[str] = set()
    if not path or not left:
        return found
    try:
        with open(path, "rb") as fh:
            for line in fh:
                for raw in [raw for raw in left if raw in line]:
                    found.add(left.pop(raw))
                if not left:
                    break
    except OSError:
        pass  # an unreadable transcript proves nothing: everything crosses
    return found


def received_by(transcript: str | None, mailbox: str | None, waiting: Iterable[str],
                store: DeliveryStore | None = None) -> dict[str, Received]:
    """thread id → what the session (its transcript, its mailbox; `waiting`: the mail
    ids still in that mailbox) already has from it."""
    store = store or DeliveryStore()
    needles = _needles(store.recent(ALL_RECORDS), mailbox)
    if not needles:
        return {}
    have = seen_in(transcript, needles) | (set(waiting) & set(needles))
    found: dict[str, _Found] = {}
    for needle in have:
        record = needles[needle]
        entry = found.setdefault(str(record.thread_id), _Found())
        entry.client_ids.add(record.id)
        if not record.in_reply_to and record.turn_id:
            entry.reply_turns.add(record.turn_id)
    return {thread: Received(frozenset(f.client_ids), frozenset(f.reply_turns))
            for thread, f in found.items()}
