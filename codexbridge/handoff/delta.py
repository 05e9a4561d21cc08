"""The delta: one bounded plain-text block in four sections, and its companion. Pure.

    [codexbridge handoff <id> · from <source> to <target> · <when>]
    == Conversation ==   what was said since the target last knew, per source
    == Decisions ==      from the departing agent's note
    == Work ==           what git shows since the checkpoint
    == Next ==           from the note
    [end of handoff <id> · every message in full: <companion>]

The cap counts characters. Over it, the middle of the conversation is cut, never the
ends: the opening messages and the latest exchange (from the last thing the human said)
survive, and a marker says how much went and where it is. The companion holds every
message verbatim, uncut; the delta names it (docs/handoff.md, "The delta").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from .messages import Said
from .note import Note

DEFAULT_CAP = 24_000
MIN_CAP = 2_000
WHO = {"user": "the human", "claude": "Claude", "codex": "Codex",
       "peer": "a peer agent, through codexbridge"}
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


def render_message(said: Said) -> str:
    return f"[{WHO.get(said.role, said.role)}] {said.text}"


def _header(inp: DeltaInput) -> str:
    return (f"[codexbridge handoff {inp.handoff_id} · from {inp.source} to {inp.target} · "
            f"{inp.at}]\n"
            f"The human moved this work to you from {inp.source}. Below is only what you "
            "have not seen: what was said since your last handoff, what was decided, what "
            "git shows, and the next step. Tool calls and their output are left out on "
            "purpose: check the repository itself. Every message in full: "
            f"{inp.companion}")


def _sections(inp: DeltaInput, budget: int | None) -> tuple[str, str, str]:
    decisions = inp.note.decisions or "(the departing agent wrote none)"
    nxt = inp.note.next or "(the departing agent wrote none: ask the human)"
    work = inp.work or "(not looked at)"
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
        head = f"-- {block.label}: {len(block.messages)} message(s) --"
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
