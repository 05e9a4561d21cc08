"""The delta: four bounded sections, the middle cut, the companion uncut (pure)."""

from __future__ import annotations

from codexbridge.handoff import delta, flow
from codexbridge.handoff.delta import Said
from codexbridge.handoff.note import parse_note

COMPANION = "/state/handoff/abc/h_1.full.txt"


def said(n: int, role: str, size: int = 40) -> Said:
    body = f"message {n:03d} " + "x" * size
    return Said(role, body + f" END{n:03d}", f"mark-{n}")


def inp(messages: list[Said], **kw: object) -> delta.DeltaInput:
    return delta.DeltaInput("h_1", "Claude Code", "Codex", "2026-12-01T10:00:00Z", COMPANION,
                            [delta.Block("Claude Code session 5e55a0a1", messages)],
                            **kw)  # type: ignore[arg-type]


def test_note_headings_split_decisions_and_next() -> None:
    note = parse_note("Decisions: keep sqlite\nRejected: the JSON store (no locking)\n"
                      "## Next:\nmigrate the callers\nthen run the suite")
    assert note.decisions == "keep sqlite\nRejected: the JSON store (no locking)"
    assert note.next == "migrate the callers\nthen run the suite"
    assert parse_note("just carry on with the tests") == ("", "just carry on with the tests")
    assert parse_note(None).empty
    both = parse_note("Next: a", decisions="use X", next_step="then b")
    assert both == ("use X", "a\nthen b")


def test_four_sections_in_order_naming_the_companion() -> None:
    built = delta.build(inp([said(1, "user"), said(2, "claude")],
                            note=parse_note("Decisions: d1\nNext: n1"), work="git: clean"))
    text = built.delta
    order = [text.index(s) for s in ("== Conversation ==", "== Decisions ==", "== Work ==",
                                     "== Next ==")]
    assert order == sorted(order)
    assert "[the human] message 001" in text and "[Claude] message 002" in text
    assert "d1" in text and "n1" in text and "git: clean" in text
    assert text.count(COMPANION) == 2 and text.startswith("[handoff h_1 through codexbridge")
    assert built.messages == 2 and built.cut_messages == 0 and built.full == built.delta


def test_over_the_cap_the_middle_goes_head_and_latest_exchange_stay() -> None:
    messages = [said(i, "user" if i % 2 else "claude", 300) for i in range(1, 61)]
    cap = 6_000
    built = delta.build(inp(messages), cap)
    text = built.delta
    assert len(text) <= cap
    assert "END001" in text and "END002" in text  # the start
    assert "END059" in text and "END060" in text  # the latest exchange: last human + answer
    assert "END030" not in text
    assert built.cut_messages > 0 and f"cut here to fit the handoff; every one of them is " \
        f"in {COMPANION}" in text
    # the companion holds every message verbatim
    assert all(f"END{i:03d}" in built.full for i in range(1, 61))
    assert all(m.text in built.full for m in messages)


def test_a_huge_latest_exchange_is_cut_in_its_middle_and_still_fits() -> None:
    messages = [said(1, "user"), said(2, "claude"), Said("user", "START " + "y" * 50_000
                                                         + " FINISH", "m3")]
    built = delta.build(inp(messages, note=parse_note("N" * 30_000)), 8_000)
    assert len(built.delta) <= 8_000
    assert "START" in built.delta and "FINISH" in built.delta and "END001" in built.delta
    assert "y" * 50_000 in built.full and "N" * 30_000 in built.full


def test_every_cap_is_honoured() -> None:
    messages = [said(i, "user" if i % 3 == 0 else "claude", 500) for i in range(40)]
    for cap in (2_000, 3_333, 10_000, 24_000):
        assert len(delta.build(inp(messages), cap).delta) <= cap


def test_nothing_said_still_makes_a_delta_with_the_note() -> None:
    built = delta.build(delta.DeltaInput("h_2", "Codex", "Claude Code", "now", COMPANION,
                                         [], parse_note("Next: review it")))
    assert "nothing new was said" in built.delta and "review it" in built.delta
    assert built.messages == 0


def test_cut_text_keeps_both_ends() -> None:
    text = "A" * 100 + "B" * 1000 + "C" * 100
    cut = delta.cut_text(text, 400)
    assert len(cut) <= 400 and cut.startswith("A") and cut.endswith("C") and "cut here" in cut
    assert delta.cut_text("short", 400) == "short"


def test_work_section_rendering() -> None:
    w = flow.Work(repo=True, head="a" * 40, branch="main", checkpoint="b" * 40,
                  checkpoint_known=True, commits=["aaaaaaa fix"], diffstat=[" x.py | 2 +-"],
                  status=[" M x.py"])
    text = flow.render_work(w, ["/p/x.py"])
    assert "checkpoint bbbbbbbbbbbb" in text and "aaaaaaa fix" in text
    assert "git diff --stat bbbbbbbbbbbb" in text and " M x.py" in text
    assert "files the agents' tools edited: /p/x.py" in text
    assert flow.render_work(flow.Work(), []) == "not a git repository"
    many = flow.render_work(flow.Work(repo=True, head="c" * 40, status=[f"?? f{i}" for i in
                                                                    range(100)]), [])
    assert "… and 61 more" in many
