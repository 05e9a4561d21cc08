"""The departing agent's note: what files cannot show. Pure.

A note may be plain text — it is then the Next section — or carry headed parts, a
heading being a line that is only `Decisions:`, `Rejected:`, `Next:` (any case, with or
without a leading `#`/`##`, text may follow the colon on the same line):

    Decisions: keep the sqlite store; the JSON store was rejected (no locking)
    Next: migrate the two remaining callers, then run the suite

`Rejected` goes with Decisions (what was rejected, and why, is a decision too).
"""

from __future__ import annotations

from typing import NamedTuple

_HEADINGS = {"decisions": "decisions", "decision": "decisions", "decided": "decisions",
             "rejected": "rejected", "next": "next", "next step": "next",
             "next steps": "next", "todo": "next", "open": "next"}


class Note(NamedTuple):
    decisions: str
    next: str

    @property
    def empty(self) -> bool:
        return not (self.decisions or self.next)


def _heading(line: str) -> tuple[str, str] | None:
    """(section, rest of the line) if `line` opens a section."""
    stripped = line.strip().lstrip("#").strip()
    head, colon, rest = stripped.partition(":")
    if not colon:
        return None
    section = _HEADINGS.get(head.strip().lower().strip("*_ "))
    return (section, rest.strip()) if section else None


def parse_note(text: str | None, decisions: str | None = None,
               next_step: str | None = None) -> Note:
    """The note split into its two sections; `decisions` / `next_step` (the MCP tool's
    own fields) are added to what the note says."""
    parts: dict[str, list[str]] = {"decisions": [], "rejected": [], "next": []}
    current = "next"
    for line in (text or "").splitlines():
        found = _heading(line)
        if found:
            current, rest = found
            if rest:
                parts[current].append(rest)
            continue
        parts[current].append(line)
    dec = "\n".join(parts["decisions"]).strip()
    rej = "\n".join(parts["rejected"]).strip()
    if rej:
        dec = (dec + "\n" if dec else "") + "Rejected: " + rej
    if decisions and decisions.strip():
        dec = (dec + "\n" if dec else "") + decisions.strip()
    nxt = "\n".join(parts["next"]).strip()
    if next_step and next_step.strip():
        nxt = (nxt + "\n" if nxt else "") + next_step.strip()
    return Note(dec, nxt)
