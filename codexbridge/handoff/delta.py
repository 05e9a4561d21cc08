"""The delta: what crosses in a handoff, and the one bounded text built from it. Pure.

What crosses is messages people and agents wrote, never tool output. A source is one
agent's own stream — a Claude Code session (its transcript) or a Codex thread (its
items). Reading it since a watermark gives a `SourceRead`: the messages after the mark,
the new mark, the files the agent's tools changed (names only), and counts the canaries
judge. Watermarks are opaque per source (a Claude record uuid, a codex `turn:item` id):
callers store them and hand them back, and never compare one source's mark with
another's.

The delta is one plain-text block in four sections, with a companion:

    [handoff <id> through codexbridge · from <source> to <target> · <when>]
    == Conversation ==   what was said since the target last knew, per source
    == Decisions ==      from the departing agent's note
    == Work ==           what git shows since the checkpoint
    == Next ==           from the note
    [end of handoff <id> · every message in full: <companion>]

Each message is one `[<who>] <text>` — `[the human]` only for what the source's own
records say the human wrote. Every piece of text in it (the messages, the note, git's
output) is quoted as `frame.quoted` quotes a sender's words: a line of it that could
pass for a line of this layout (`[the human] …`, `== Next ==`, `[end of handoff …`,
`[codexbridge …`) gets `> ` in front. No line of the delta itself opens with
`[codexbridge`, so the delta travels inside a mail frame untouched.

The cap counts characters. Over it, the middle of the conversation is cut, never the
ends: the opening messages and the latest exchange (from the last thing the human said)
survive, and a marker says how much went and where it is. The companion holds every
message verbatim, uncut; the delta names it (docs/handoff.md, "The delta").
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

from ..messages.frame import quoted
from .note import Note

CLAUDE = "claude"
CODEX = "codex"
PEER = "peer"  # a message one agent sent the other through the bridge


class Verdict(StrEnum):
    """What a canary says about a source's parse (docs/handoff.md, "Canaries")."""

    READABLE = "readable"  # messages were recognised
    EMPTY = "empty"  # nothing said yet (a fresh session is neutral, never red)
    DRIFTED = "drifted"  # rows that parse into nothing recognisable: the format changed
    MISSING = "missing"  # the transcript / thread is gone or unreadable


@dataclass(frozen=True)
class Said:
    role: str  # "user" (the human) or the agent ("claude", "codex")
    text: str
    mark: str  # this message's watermark in its source
    at: str | None = None


@dataclass
class Stats:
    """What a parser saw: the canary's evidence."""

    records: int = 0  # rows (lines, items) looked at
    bad_rows: int = 0  # rows that are not even JSON objects
    kinds: Counter[str] = field(default_factory=Counter)  # row type → count
    unknown: Counter[str] = field(default_factory=Counter)  # types this parser does not know
    unreadable: int = 0  # rows of a conversation type whose shape is not understood
    said: int = 0  # messages recognised (all of the stream, not only the delta)

    def verdict(self, roles: tuple[str, str]) -> tuple[Verdict, str]:
        """`roles`: the two conversation row types (both must show up once anything is
        unknown: a renamed one would otherwise vanish from every delta silently)."""
        known_roles = [r for r in roles if self.kinds.get(r)]
        if self.records == 0:
            return Verdict.EMPTY, "nothing recorded yet"
        if self.said == 0 and (self.unknown or self.unreadable or self.bad_rows):
            what = ", ".join(f"{k} ×{n}" for k, n in self.unknown.most_common(5))
            return Verdict.DRIFTED, (
                f"{self.records} rows, no message recognised"
                + (f"; unknown row types: {what}" if what else "")
                + (f"; {self.unreadable} conversation rows of an unknown shape"
                   if self.unreadable else "")
                + (f"; {self.bad_rows} rows are not JSON objects" if self.bad_rows else ""))
        if self.unreadable or (self.unknown and len(known_roles) < len(roles)):
            missing = [r for r in roles if r not in known_roles]
            return Verdict.DRIFTED, (
                f"{self.said} messages recognised, but "
                + (f"{self.unreadable} conversation rows have an unknown shape"
                   if self.unreadable else
                   f"no {', '.join(missing)} rows beside unknown types "
                   + ", ".join(self.unknown)))
        if self.said == 0:
            return Verdict.EMPTY, f"{self.records} rows, nothing said yet"
        return Verdict.READABLE, f"{self.said} messages in {self.records} rows"


@dataclass
class Parsed:
    """What a source's parser made of its rows since a mark (pure)."""

    messages: list[Said] = field(default_factory=list)
    mark: str | None = None
    found: bool = False  # the mark was in the rows
    files: list[str] = field(default_factory=list)
    stats: Stats = field(default_factory=Stats)


@dataclass
class SourceRead:
    """One source read since `since`: what is new, and where the mark moves to."""

    key: str  # "claude:<session id>" / "codex:<thread id>"
    kind: str  # CLAUDE or CODEX
    label: str  # who produced it, as the target reads it
    since: str | None  # the mark the target already had
    messages: list[Said] = field(default_factory=list)
    mark: str | None = None  # the new mark (unchanged when nothing is new)
    found: bool = True  # False: `since` was not in the stream (read from the start)
    files: list[str] = field(default_factory=list)  # files the agent's tools changed
    stats: Stats = field(default_factory=Stats)
    where: str | None = None  # the transcript path / the thread id
    problem: str | None = None  # why it could not be read (then nothing is new)

    def take(self, parsed: Parsed) -> SourceRead:
        self.messages, self.mark, self.files, self.stats = (parsed.messages, parsed.mark,
                                                             parsed.files, parsed.stats)
        self.found = self.since is None or parsed.found
        return self


def is_handoff_id(value: object) -> bool:
    """`h_<yyyymmdd>T<hhmmss>_<6 hex>`: a handoff id (also its visible turn's clientId)."""
    if not isinstance(value, str) or len(value) != 24 or not value.startswith("h_"):
        return False
    stamp, hexpart = value[2:17], value[18:]
    return (value[17] == "_" and stamp[8] == "T" and (stamp[:8] + stamp[9:]).isdigit()
            and all(c in "0123456789abcdef" for c in hexpart))


def source_key(kind: str, ident: str) -> str:
    return f"{kind}:{ident}"


def short(ident: str) -> str:
    return ident[:8] if len(ident) > 12 else ident


@dataclass(frozen=True)
class Received:
    """What a Claude session already has from one Codex thread (`claude_source.received_by`):
    left out of what that thread's reading carries to it."""

    client_ids: frozenset[str] = frozenset()  # userMessages it wrote (its requests, answers)
    reply_turns: frozenset[str] = frozenset()  # turns whose final agentMessage it got as mail


# --- the text ----------------------------------------------------------------------------

DEFAULT_CAP = 24_000
MIN_CAP = 2_000
WHO = {"user": "the human", "claude": "Claude", "codex": "Codex",
       "peer": "a peer agent, through codexbridge"}
# How the delta's own lines open (lower case): a line of quoted text that does is quoted.
MARKERS = ("[handoff", "[end of handoff", "== ", "-- ",
           *(f"[{who.casefold()}]" for who in WHO.values()))
CUT_ROOM = 240  # the marker line and its newlines
TAIL_SHARE = 0.6  # of the conversation budget, for the latest exchange


@dataclass(frozen=True)
class Block:
    """One source's part of the conversation."""

    label: str  # who produced it: "Claude Code session 03e79527"
    messages: list[Said]
    remark: str | None = None  # e.g. the target's old mark was not found


@dataclass(frozen=True)
class DeltaInput:
    handoff_id: str
    source: str  # "Claude Code" / "Codex": the departing agent
    target: str  # the receiving agent, as the text names it
    at: str
    companion: str  # path of the un-truncated companion
    blocks: list[Block] = field(default_factory=list)
    note: Note = field(default_factory=lambda: Note("", ""))
    work: str = ""


class Built(NamedTuple):
    delta: str
    full: str
    messages: int
    cut_messages: int  # dropped whole from the middle
    cut_chars: int  # characters of the conversation not in the delta


def cut_text(text: str, limit: int, what: str = "characters") -> str:
    """`text` within `limit` characters, its middle replaced by a marker."""
    if len(text) <= limit:
        return text
    marker = f"\n[… {{n}} {what} cut here …]\n"
    room = max(0, limit - len(marker) - 8)
    head = room * 2 // 5
    tail = room - head
    gone = len(text) - head - tail
    return text[:head] + marker.format(n=gone) + (text[-tail:] if tail else "")


def words(text: str) -> str:
    """Text someone wrote, as the delta carries it (see the module docstring)."""
    return quoted(text, MARKERS)


def one_line(text: str) -> str:
    """A name inside one of the delta's own lines (a thread's name is anyone's)."""
    return quoted(" ".join(text.split()))


def render_message(said: Said) -> str:
    return f"[{WHO.get(said.role, said.role)}] {words(said.text)}"


def _header(inp: DeltaInput) -> str:
    return (f"[handoff {inp.handoff_id} through codexbridge · from {inp.source} to "
            f"{inp.target} · {inp.at}]\n"
            f"This work moves to you from {inp.source}. Below is only what you "
            "have not seen: what was said since your last handoff, what was decided, what "
            "git shows, and the next step. Tool calls and their output are left out on "
            "purpose: check the repository itself. Every message in full: "
            f"{inp.companion}")


def _sections(inp: DeltaInput, budget: int | None) -> tuple[str, str, str]:
    decisions = words(inp.note.decisions) or "(the departing agent wrote none)"
    nxt = words(inp.note.next) or "(the departing agent wrote none: ask the human)"
    work = words(inp.work) or "(not looked at)"
    if budget is not None:
        decisions = cut_text(decisions, budget)
        nxt = cut_text(nxt, budget)
        work = cut_text(work, budget)
    return (f"== Decisions ==\n{decisions}", f"== Work ==\n{work}", f"== Next ==\n{nxt}")


def _chunks(blocks: list[Block]) -> tuple[list[str], list[bool], int]:
    """Conversation lines, which are messages (not block headers), and where the
    latest exchange starts (the last human message, else the last message)."""
    chunks: list[str] = []
    is_msg: list[bool] = []
    tail_from = -1
    last_msg = -1
    for block in blocks:
        head = f"-- {one_line(block.label)}: {len(block.messages)} message(s) --"
        chunks.append(head + (f"\n({block.remark})" if block.remark else ""))
        is_msg.append(False)
        for said in block.messages:
            if said.role == "user":
                tail_from = len(chunks)
            last_msg = len(chunks)
            chunks.append(render_message(said))
            is_msg.append(True)
    if tail_from < 0:
        tail_from = last_msg if last_msg >= 0 else len(chunks)
    return chunks, is_msg, tail_from


def _fit(chunks: list[str], is_msg: list[bool], tail_from: int, budget: int,
         companion: str) -> tuple[str, int, int]:
    """The conversation within `budget`: (text, messages cut, characters cut)."""
    whole = "\n\n".join(chunks)
    if len(whole) <= budget:
        return whole, 0, 0
    avail = max(0, budget - CUT_ROOM - len(companion))
    tail = "\n\n".join(chunks[tail_from:])
    if len(tail) > int(avail * TAIL_SHARE):
        tail = cut_text(tail, int(avail * TAIL_SHARE))
    room = avail - len(tail)
    kept: list[str] = []
    used = 0
    i = 0
    while i < tail_from and used + len(chunks[i]) + 2 <= room:
        kept.append(chunks[i])
        used += len(chunks[i]) + 2
        i += 1
    if i < tail_from and room - used > 200:
        # The next message does not fit whole: its beginning still tells what it was.
        kept.append(chunks[i][: room - used - 20] + " …")
        i += 1
        partial = 1
    else:
        partial = 0
    gone = sum(1 for j in range(i, tail_from) if is_msg[j]) + partial
    gone_chars = len(whole) - used - len(tail)
    marker = (f"[… {gone} message(s) ({gone_chars} characters) cut here to fit the handoff; "
              f"every one of them is in {companion} …]")
    return "\n\n".join([*kept, marker, tail]), gone, max(0, gone_chars)


def build(inp: DeltaInput, cap: int = DEFAULT_CAP) -> Built:
    """The bounded delta (at most `cap` characters) and the uncut companion."""
    cap = max(cap, MIN_CAP)
    header = _header(inp)
    footer = f"[end of handoff {inp.handoff_id} · every message in full: {inp.companion}]"
    chunks, is_msg, tail_from = _chunks(inp.blocks)
    total = sum(is_msg)
    if not chunks:
        chunks, is_msg, tail_from = ["(nothing new was said since your last handoff)"], \
            [False], 1
    full_parts = [header, "== Conversation ==\n" + "\n\n".join(chunks),
                  *_sections(inp, None), footer]
    full = "\n\n".join(full_parts) + "\n"
    sections = _sections(inp, cap // 5)
    fixed = len(header) + len(footer) + sum(len(s) for s in sections) + 40
    conv, gone, gone_chars = _fit(chunks, is_msg, tail_from, max(0, cap - fixed),
                                  inp.companion)
    delta = "\n\n".join([header, "== Conversation ==\n" + conv, *sections, footer]) + "\n"
    if len(delta) > cap:  # only a pathological header/label length gets here
        delta = cut_text(delta, cap)
    return Built(delta, full, total, gone, gone_chars)
