"""The departing agent's note: what files cannot show. Pure.

A note may be plain text — it is then the Next section — or carry headed parts. A
heading is a label and a colon, wherever people write one:

    Decisions: keep the sqlite store; Rejected: the JSON store (no locking)
    Next: migrate the two remaining callers, then run the suite

    Decisions: use X. Next: write the tests          (one line, as README shows it)
    - **Decided:** use X                             (a bullet, markdown bold)
    ## Next steps:                                   (a markdown heading)

Labels, in any case: `Decision(s)`, `Decided`, `Decisions made`, `Key decisions`,
`Rejected`, `Next`, `Next step(s)`, `Next up`, `To do`/`Todo`, `Open`, `Open questions`.
A label opens a part at the start of a line (after any `#`, `>`, bullet or `1.` marker,
in `**bold**` or not) or, inside a line, after the end of a sentence or clause (`.`, `;`,
`!`, `?`, `|`, a dash); alone on its line it needs no colon (`## Next steps`). "I
decided: X" or "the next: X" in the middle of prose are words, not headings.
`Rejected` goes with Decisions (what was rejected, and why, is a decision too). Text
before the first heading belongs to Next, as a headless note does.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_HEADINGS = {"decisions": "decisions", "decision": "decisions", "decided": "decisions",
             "decisions made": "decisions", "key decisions": "decisions",
             "rejected": "rejected", "next": "next", "next step": "next",
             "next steps": "next", "next up": "next", "todo": "next", "to do": "next",
             "to-do": "next", "open": "next", "open questions": "next"}
_LABEL = "|".join(sorted((r"\s+".join(map(re.escape, k.split())) for k in _HEADINGS),
                         key=len, reverse=True))
# Where a heading may open: a line's start (past markdown markers) or a clause's end.
_LINE_START = r"(?:^[ \t]*(?:(?:[#>]+|[-*+•]|\d+[.)])[ \t]*)*)"
_CLAUSE_END = r"(?:(?<=[.;!?|—–])[ \t]+|(?<=\s)[-–—][ \t]+)"
_BOLD = r"(?:\*\*|__)?"
_HEADING = re.compile(
    rf"(?:{_LINE_START}|{_CLAUSE_END}){_BOLD}(?P<label>{_LABEL}){_BOLD}[ \t]*:[ \t]*{_BOLD}"
    # a label alone on its line needs no colon: "## Next steps", "**Decisions**"
    rf"|{_LINE_START}{_BOLD}(?P<alone>{_LABEL}){_BOLD}[ \t]*$",
    re.IGNORECASE | re.MULTILINE)
_TRAILING = " \t\n;,|-–—"


class Note(NamedTuple):
    decisions: str
    next: str

    @property
    def empty(self) -> bool:
        return not (self.decisions or self.next)


def _section(label: str) -> str:
    return _HEADINGS[" ".join(label.lower().split())]


def split_parts(text: str) -> dict[str, list[str]]:
    """The note's text per part ("decisions", "rejected", "next"), in order."""
    parts: dict[str, list[str]] = {"decisions": [], "rejected": [], "next": []}
    current, start = "next", 0
    for found in _HEADING.finditer(text):
        parts[current].append(text[start:found.start()])
        current, start = _section(found.group("label") or found.group("alone")), found.end()
    parts[current].append(text[start:])
    return parts


def _joined(chunks: list[str]) -> str:
    kept = [c.strip().rstrip(_TRAILING).strip() for c in chunks]
    return "\n".join(c for c in kept if c)


def parse_note(text: str | None, decisions: str | None = None,
               next_step: str | None = None) -> Note:
    """The note split into its two sections; `decisions` / `next_step` (the MCP tool's
    own fields) are added to what the note says."""
    parts = split_parts(text or "")
    dec = _joined(parts["decisions"])
    rej = _joined(parts["rejected"])
    if rej:
        dec = (dec + "\n" if dec else "") + "Rejected: " + rej
    if decisions and decisions.strip():
        dec = (dec + "\n" if dec else "") + decisions.strip()
    nxt = _joined(parts["next"])
    if next_step and next_step.strip():
        nxt = (nxt + "\n" if nxt else "") + next_step.strip()
    return Note(dec, nxt)
