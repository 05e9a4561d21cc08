"""One conversation as a timeline across both agents — who asked whom, each hop, every
state change of its deliveries, the answers with their latency (asked → answered), what
each bridged turn cost in tokens and the conversation's running total —
read from the records that exist, never kept anywhere else:

    conversations/<conv>.json     the hops: who asked whom, which delivery (conversations.py)
    deliveries/<id>.json          each delivery: history, previews, reason (records.py)
    deliveries/<id>.text          the whole message of a request or of Claude's answer
    deliveries/<id>.reply         Codex's answer, when it was too long for mail

Every event is an `Event`; `Reader().timeline(conv)` gives them in time order, and a
follower (`codexbridge log --follow`) asks its reader again and shows the events whose
`key` it has not shown yet. A record that no longer reads is an event of its own
(`DAMAGED`), never the end of the timeline.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field, replace
from typing import NamedTuple

from ..codex.protocol.enums import WireEnum
from ..host.jsonfile import nofollow
from ..jsontypes import JsonRecord
from .conversations import Conversation, Conversations, HopEntry, valid_id
from .envelope import Speaker
from .records import (
    PREVIEW_CHARS,
    Damaged,
    Delivery,
    DeliveryState,
    DeliveryStore,
    Step,
    ToClaude,
    ToCodex,
    Tokens,
    add_tokens,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..jsontypes import JsonObject

# s a hop with no delivery record is taken for one whose record is being written (the
# hop is spent first, the record saved right after)
RECORD_GRACE = 2.0
WHOLE_MAX = 1 << 20  # characters of a whole text read for `log --full`; the file has all


class Kind(WireEnum):
    ASKED = "asked"  # a request: one hop of the conversation spent
    STATE = "state"  # a delivery changed state (a step of its history)
    ANSWERED = "answered"  # the answer to a request came back
    NOTICE = "notice"  # codexbridge told the asking Codex thread about its request
    TOKENS = "tokens"  # what a bridged turn cost (noted once it is known: after its answer)
    DAMAGED = "damaged"  # a record that is there but no longer reads


class Agent(WireEnum):
    CLAUDE = "claude"
    CODEX = "codex"
    HUMAN = "human"  # the human's own shell
    BRIDGE = "codexbridge"  # codexbridge's own notices


_AGENT = {Speaker.CLAUDE_CODE: Agent.CLAUDE, Speaker.CODEX: Agent.CODEX,
          Speaker.HUMAN: Agent.HUMAN}
# Events at the same moment: the request before its first step, the answer before the
# step that closes its request.
_ORDER = {Kind.DAMAGED: 0, Kind.ASKED: 1, Kind.NOTICE: 1, Kind.ANSWERED: 2, Kind.TOKENS: 3,
          Kind.STATE: 4}


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened in a conversation. `who` spoke (the asker of a request,
    the answerer of an answer) to `to`; `text` is the record's preview of what was said
    (`whole`: the file that holds all of it, `size` its UTF-8 bytes)."""

    kind: Kind
    at: float
    delivery: str | None = None
    hop: int | None = None  # the hop a request spent (None: an answer spends none)
    max_hops: int | None = None
    who: Agent | None = None
    to: Agent | None = None
    state: DeliveryState | None = None
    text: str = ""
    size: int = 0
    whole: str | None = None
    latency: float | None = None  # asked → answered, in seconds
    in_reply_to: str | None = None
    reason: str | None = None
    # TOKENS: what `who`'s turn on `delivery` cost, and the conversation's total with it
    # (the events' own sum, in time order)
    tokens: Tokens | None = None
    total: Tokens | None = None

    @property
    def key(self) -> str:
        """What tells this event from every other of the conversation: one per request,
        per answer (of which request: Claude's answer reads from the request's record
        until its own record is written), per history step. A follower shows each once."""
        if self.kind is Kind.ANSWERED:
            return f"answered:{self.in_reply_to}"
        if self.kind is Kind.STATE:
            return f"state:{self.delivery}:{self.state}:{self.at!r}"
        return f"{self.kind.value}:{self.delivery}"

    @property
    def cut(self) -> bool:
        """`text` is only the start of what was said (a preview is cut at PREVIEW_CHARS
        with `…` after it; `size` counts the whole text's UTF-8 bytes)."""
        return len(self.text) > PREVIEW_CHARS or self.size > len(self.text.encode())

    def as_json(self) -> JsonObject:
        data: JsonObject = {k: v for k, v in asdict(self).items()
                            if v is not None and (k not in ("text", "size") or self.text)}
        for name in ("kind", "who", "to", "state"):
            if name in data:
                data[name] = str(data[name])
        return data  # (tokens, total: asdict made them {input, cached, output})


@dataclass(slots=True)
class Timeline:
    """A conversation's events, oldest first, and what its own record says (None when
    it has none: only deliveries name it; `damaged`: its file no longer reads)."""

    conversation: str
    record: Conversation | None
    events: list[Event] = field(default_factory=list)
    damaged: str | None = None

    @property
    def started(self) -> float:
        first = [e.at for e in self.events[:1]] + (
            [self.record.created_at] if self.record and self.record.created_at else [])
        return min(first, default=0.0)

    def header(self) -> JsonObject:
        hops = len(self.record.hops) if self.record else None
        tokens = self.record.tokens if self.record else None
        return {"conversation": self.conversation, "hops": hops,
                "max_hops": self.record.max_hops if self.record else None,
                "tokens": asdict(tokens) if tokens else None,
                "started": self.started, "events": len(self.events),
                **({"damaged": self.damaged} if self.damaged else {})}


class Summary(NamedTuple):
    """A conversation in the list: its last activity (its last hop, or its newest
    delivery) and the requests it carried (None: its own record is gone or damaged)."""

    conversation: str
    last: float
    hops: int | None


class Reader:
    """Reads one state home's conversations and deliveries. Read again (a follower's
    reader), it parses only the record files that changed since: every write replaces a
    file whole (a new inode), so its inode, size and time tell."""

    def __init__(self, convs: Conversations | None = None,
                 store: DeliveryStore | None = None) -> None:
        self.convs, self.store = convs or Conversations(), store or DeliveryStore()
        self._files: dict[str, tuple[tuple[int, int, int], Delivery | Damaged | None]] = {}

    def deliveries(self) -> dict[str, Delivery | Damaged]:
        """Every delivery record there is, by id (a damaged one as Damaged)."""
        try:
            entries = list(os.scandir(self.store.root))
        except FileNotFoundError:
            entries = []
        files = {}
        for entry in entries:
            if not entry.name.endswith(".json") or entry.name.startswith("."):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            key, seen = (st.st_ino, st.st_size, st.st_mtime_ns), self._files.get(entry.name)
            files[entry.name] = seen if seen is not None and seen[0] == key else (
                key, self.store.read(entry.name[:-len(".json")]))
        self._files = files
        return {name[:-len(".json")]: r for name, (_, r) in files.items() if r is not None}

    def conversations(self) -> list[Summary]:
        """Every conversation this machine has a record of, the most recent first."""
        found: dict[str, Summary] = {}
        for conv in self.convs.ids():
            record = self.convs.get(conv)
            found[conv] = Summary(conv, record.updated_at, len(record.hops)) if record \
                else Summary(conv, 0.0, None)
        for r in self.deliveries().values():
            if isinstance(r, Damaged) or not r.conversation:
                continue
            known = found.get(r.conversation, Summary(r.conversation, 0.0, None))
            found[r.conversation] = known._replace(last=max(known.last, r.created_at))
        return sorted(found.values(), key=lambda c: c.last, reverse=True)

    def timeline(self, conv: str, *, now: float | None = None) -> Timeline | None:
        """`conv`'s timeline; None when nothing on this machine names it. UsageError
        when `conv` is not a conversation id."""
        conv = valid_id(conv)
        now = time.time() if now is None else now
        record = self.convs.get(conv)
        damaged = (f"{self.convs.path(conv)} does not read as a conversation; the "
                   "deliveries that name it are shown") \
            if record is None and self.convs.path(conv).exists() else None
        hops = record.hops if record else []
        records = self.deliveries()
        events = [Event(Kind.DAMAGED, h.at, h.delivery, hop=h.n,
                        reason=f"{bad.path}: {bad.reason}")
                  for h in hops if isinstance(bad := records.get(h.delivery or ""), Damaged)]
        found = {i: r for i, r in records.items() if not isinstance(r, Damaged)
                 and (r.conversation == conv or any(h.delivery == i for h in hops))}
        if record is None and not found and damaged is None:
            return None
        events += _hops_without_records(hops, found, events, now)
        for delivery in found.values():
            events += _events_of(delivery, found, self.store)
        events.sort(key=lambda e: (e.at, _ORDER[e.kind]))
        return Timeline(conv, record, _running_total(events), damaged)


def _running_total(events: list[Event]) -> list[Event]:
    total: Tokens | None = None
    out = []
    for e in events:
        if e.tokens is not None:
            total = add_tokens(total, e.tokens)
            e = replace(e, total=total)
        out.append(e)
    return out


def _hops_without_records(hops: list[HopEntry], found: dict[str, Delivery],
                          shown: list[Event], now: float) -> list[Event]:
    """A request with no delivery record: mail that asked for no answer (only its hop is
    kept), or a record already expired. A hop younger than RECORD_GRACE may be a request
    whose record is being written (the hop is spent first): not shown yet."""
    damaged = {e.delivery for e in shown}
    out = []
    for hop in hops:
        if hop.delivery in found or hop.delivery in damaged or now - hop.at < RECORD_GRACE:
            continue
        who, _, to = (hop.direction or "").partition("→")
        out.append(Event(Kind.ASKED, hop.at, hop.delivery, hop=hop.n,
                         who=Agent.parse(who), to=Agent.parse(to),
                         reason="mail with no answer asked for: its words are in the "
                                "mailbox, not in a delivery record"))
    return out


def _events_of(d: Delivery, found: dict[str, Delivery], store: DeliveryStore) -> list[Event]:
    """What one delivery record says: its request, answer or notice, and every step."""
    # (a record from before senders were kept: only Claude Code asked Codex, only Codex
    # asked Claude)
    speaker = Speaker.parse(d.sender) or (
        Speaker.CODEX if isinstance(d, ToClaude) else Speaker.CLAUDE_CODE)
    sender = _AGENT[speaker]
    out = [Event(Kind.STATE, at, d.id, state=state, reason=reason)
           for at, state, reason in _steps(d.history)]
    if d.tokens is not None:  # Claude's answer (to Claude), else Codex's turn on it
        when = [d.updated_at] + [at for at, _, _ in _steps(d.history)[-1:]]
        spent = Agent.CLAUDE if isinstance(d, ToClaude) else Agent.CODEX
        out.append(Event(Kind.TOKENS, max(when), d.id, who=spent, tokens=d.tokens))
    if isinstance(d, ToClaude):
        out.append(Event(Kind.ASKED, d.created_at, d.id, d.hop, d.max_hops, sender,
                         Agent.CLAUDE, text=d.text_preview, size=_size(None, d.text_preview)))
        if d.answered_at is not None and not any(
                isinstance(r, ToCodex) and r.in_reply_to == d.id for r in found.values()):
            out.append(Event(Kind.ANSWERED, d.answered_at, d.id, who=Agent.CLAUDE,
                             to=sender, text=d.reply_preview, size=d.reply_bytes,
                             latency=d.answered_at - d.created_at, in_reply_to=d.id))
        return out
    text = _whole_path(store, d.id, "text")
    if d.in_reply_to is not None:
        asked = found.get(d.in_reply_to)
        out.append(Event(Kind.NOTICE if d.notice else Kind.ANSWERED, d.created_at, d.id,
                         who=Agent.BRIDGE if d.notice else sender, to=Agent.CODEX,
                         text=d.text_preview, size=_size(text, d.text_preview), whole=text,
                         latency=None if d.notice or asked is None
                         else d.created_at - asked.created_at, in_reply_to=d.in_reply_to))
        return out
    out.append(Event(Kind.ASKED, d.created_at, d.id, d.hop, d.max_hops, sender,
                     Agent.CODEX, text=d.text_preview, size=_size(text, d.text_preview),
                     whole=text))
    done = [at for at, state, _ in _steps(d.history) if state is DeliveryState.DELIVERED]
    if done:
        out.append(Event(Kind.ANSWERED, done[0], d.id, who=Agent.CODEX, to=sender,
                         text=d.reply_preview, size=d.reply_bytes,
                         whole=_whole_path(store, d.id, "reply"),
                         latency=done[0] - d.created_at, in_reply_to=d.id))
    return out


class _Step(JsonRecord):
    """A step of a record's `history` (records.Step), as the file has it."""

    state: str | None = None
    at: float | None = None
    reason: str | None = None


def _steps(history: list[Step]) -> list[tuple[float, DeliveryState | None, str | None]]:
    """A history's steps: time, state, reason (a hand-edited step with no usable time is
    left out: the record's other steps still show)."""
    steps = [_Step.read(step) for step in history]
    return [(s.at, DeliveryState.parse(s.state), s.reason) for s in steps if s.at is not None]


def _whole_path(store: DeliveryStore, delivery_id: str, suffix: str) -> str | None:
    path = store.root / f"{delivery_id}.{suffix}"
    return str(path) if path.is_file() and not path.is_symlink() else None


def _size(path: str | None, shown: str) -> int:
    """The whole text's size in UTF-8 bytes: its file's, else the preview's."""
    try:
        return os.stat(path).st_size if path is not None else len(shown.encode())
    except OSError:
        return len(shown.encode())


def whole_text(event: Event) -> str:
    """Everything `event` said: its file (up to WHOLE_MAX characters, then where the rest
    is), else the record's preview."""
    if event.whole is None:
        return event.text
    try:
        with open(event.whole, encoding="utf-8", errors="replace", opener=nofollow) as fh:
            text = fh.read(WHOLE_MAX + 1)
    except OSError:
        return event.text
    if len(text) > WHOLE_MAX:
        return text[:WHOLE_MAX] + f"\n… (the rest is in {event.whole})"
    return text
