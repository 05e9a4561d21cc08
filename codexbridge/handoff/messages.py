"""What crosses in a handoff: messages people and agents wrote, never tool output. Pure.

A source is one agent's own stream — a Claude Code session (its transcript) or a Codex
thread (its items). Reading it since a watermark gives a `SourceRead`: the messages
after the mark, the new mark, the files the agent's tools changed (names only), and
counts the canaries judge. Watermarks are opaque per source (a Claude record uuid, a
codex `turn:item` id): callers store them and hand them back, and never compare one
source's mark with another's.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum

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
