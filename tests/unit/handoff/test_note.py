"""The departing agent's note: `Decisions:` / `Next:` found wherever people write them
(issue 16, point 5: README's one-line example lost its Next)."""

from __future__ import annotations

import pytest

from codexbridge.handoff import delta
from codexbridge.handoff.note import parse_note

README = "Decisions: use X. Next: write the tests"


def test_readmes_one_line_example_keeps_its_next() -> None:
    note = parse_note(README)
    assert note == ("use X.", "write the tests")
    built = delta.build(delta.DeltaInput("h_1", "Codex", "Claude Code", "now", "/c", [],
                                         note, "git: clean"), 8_000)
    assert "== Next ==\nwrite the tests" in built.delta
    assert "the departing agent wrote none" not in built.delta


@pytest.mark.parametrize(("text", "decisions", "next_step"), [
    ("decisions: use X; next step: write the tests", "use X", "write the tests"),
    ("DECIDED: use X. NEXT STEPS: a, then b", "use X.", "a, then b"),
    ("Decisions: keep sqlite; Rejected: the JSON store (no locking)\nNext: migrate",
     "keep sqlite\nRejected: the JSON store (no locking)", "migrate"),
    ("Decided: use X — Rejected: Y (slow). Next steps: a; b",
     "use X\nRejected: Y (slow).", "a; b"),
    ("- **Decisions:** use X\n- **Next**: write tests\n  and docs",
     "use X", "write tests\n  and docs"),
    ("* __Decided__: a\n* Next up: b", "a", "b"),
    ("1. Decision: a\n2. To do: b", "a", "b"),
    ("## Decisions\n- a\n- b\n\n## Next steps\n- c", "- a\n- b", "- c"),
    ("> Key decisions: a | Open questions: b", "a", "b"),
    ("Decisions: a. Decided: b. Next: c. Next step: d", "a.\nb.", "c.\nd"),
])
def test_headings_as_people_write_them(text: str, decisions: str, next_step: str) -> None:
    assert parse_note(text) == (decisions, next_step)


def test_prose_that_only_contains_the_words_is_not_split() -> None:
    for text in ("I decided: X, and the next: Y", "What comes next: ask Codex",
                 "the nextStep: field"):
        assert parse_note(text) == ("", text)


def test_text_before_the_first_heading_and_the_tool_fields() -> None:
    assert parse_note("Refactored the parser. Next: tests") == (
        "", "Refactored the parser.\ntests")
    assert parse_note("Next: a", decisions="use X", next_step="then b") == (
        "use X", "a\nthen b")
    assert parse_note(None).empty and parse_note("  \n").empty
