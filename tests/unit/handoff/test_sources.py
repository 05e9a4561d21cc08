"""The two parsers a handoff reads its sources with (pure: records in, messages out)."""

from __future__ import annotations

import json
from pathlib import Path

from codexbridge.handoff import claude_source, codex_source, flow
from codexbridge.handoff.delta import Parsed, Verdict, is_handoff_id
from tests.support import payloads
from tests.support.transcripts import Transcript


def words(parsed: Parsed) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in parsed.messages]


# --- Claude ----------------------------------------------------------------------------

def session_with_tools() -> Transcript:
    t = Transcript()
    t.bookkeeping()
    t.prompt("please fix the parser")
    t.tool("Bash", {"command": "pytest -q"}, "TOOL OUTPUT 3 failed")
    t.tool("Edit", {"file_path": "/p/parse.py", "old_string": "a", "new_string": "b"}, "ok")
    t.reply("Fixed the off-by-one in parse.py")
    t.hook_feedback("codexbridge: 1 new message arrived … MAIL TEXT")
    t.reply("Handled the mail")
    return t


def test_only_words_cross_never_tool_calls_or_their_output() -> None:
    parsed = claude_source.parse(session_with_tools().lines(), None)
    assert words(parsed) == [("user", "please fix the parser"),
                             ("claude", "Fixed the off-by-one in parse.py"),
                             ("claude", "Handled the mail")]
    text = " ".join(m.text for m in parsed.messages)
    assert "TOOL OUTPUT" not in text and "pytest" not in text and "MAIL TEXT" not in text
    assert parsed.files == ["/p/parse.py"]  # names only, from the Edit call's input
    assert parsed.mark == parsed.messages[-1].mark
    assert parsed.stats.verdict(claude_source.ROLES)[0] is Verdict.READABLE


def test_since_a_mark_only_what_came_after() -> None:
    t = session_with_tools()
    first = claude_source.parse(t.lines(), None)
    t.prompt("second request")
    t.reply("second answer")
    again = claude_source.parse(t.lines(), first.mark)
    assert again.found and words(again) == [("user", "second request"),
                                            ("claude", "second answer")]
    nothing = claude_source.parse(t.lines(), again.mark)
    assert nothing.found and nothing.messages == [] and nothing.mark == again.mark


def test_a_mark_not_in_the_file_reads_everything_and_says_so() -> None:
    parsed = claude_source.parse(session_with_tools().lines(), "no-such-uuid")
    assert not parsed.found and len(parsed.messages) == 3


def test_a_rewound_branch_is_dropped_but_a_broken_chain_keeps_file_order() -> None:
    t = Transcript()
    root = t.prompt("start")
    t.reply("abandoned answer")
    t.last = root  # the human rewound to the first prompt and asked again
    t.reply("the answer that stayed")
    parsed = claude_source.parse(t.lines(), None)
    assert words(parsed) == [("user", "start"), ("claude", "the answer that stayed")]
    t.records[0]["parentUuid"] = "gone-parent"  # the chain no longer reaches a root
    assert len(claude_source.parse(t.lines(), None).messages) == 3


def test_subagents_commands_live_peer_mail_and_synthetic_text_do_not_cross() -> None:
    t = Transcript()
    t.prompt("codexbridge: 1 new message (live)", origin={"kind": "peer", "msg_id": "m-1"})
    t.prompt("<command-name>/model</command-name>")
    t.prompt("sidechain prompt", isSidechain=True)
    t.reply("sidechain answer", isSidechain=True)
    t.records.append({**t.records[-1], "uuid": "syn", "isSidechain": False, "message": {
        "role": "assistant", "model": "<synthetic>", "content": [{"type": "text",
                                                                 "text": "No response"}]}})
    t.prompt("real words", isSidechain=False)
    assert words(claude_source.parse(t.lines(), None)) == [("user", "real words")]


def test_renamed_record_types_are_drift_not_an_empty_session() -> None:
    t = session_with_tools()
    for rec in t.records:
        rec["type"] = {"user": "human", "assistant": "ai"}.get(str(rec.get("type")),
                                                               rec.get("type"))
    stats = claude_source.parse(t.lines(), None).stats
    verdict, why = stats.verdict(claude_source.ROLES)
    assert verdict is Verdict.DRIFTED and "human" in why and "ai" in why
    # one renamed role beside unknown types is drift too (Claude's words would vanish)
    t = session_with_tools()
    for rec in t.records:
        if rec.get("type") == "assistant":
            rec["type"] = "model_turn"
    verdict, why = claude_source.parse(t.lines(), None).stats.verdict(claude_source.ROLES)
    assert verdict is Verdict.DRIFTED and "assistant" in why


def test_a_message_of_unknown_shape_is_drift_and_garbage_lines_are_counted() -> None:
    t = session_with_tools()
    t.records.append({"type": "assistant", "uuid": "x", "message": "a string now"})
    lines = [*t.lines(), b"not json\n", b"[1, 2]\n", b"\n"]
    stats = claude_source.parse(lines, None).stats
    assert stats.unreadable == 1 and stats.bad_rows == 2
    assert stats.verdict(claude_source.ROLES)[0] is Verdict.DRIFTED


def test_an_empty_or_fresh_session_is_neutral() -> None:
    assert claude_source.parse([], None).stats.verdict(claude_source.ROLES)[0] is Verdict.EMPTY
    t = Transcript()
    t.bookkeeping()
    assert claude_source.parse(t.lines(), None).stats.verdict(
        claude_source.ROLES)[0] is Verdict.EMPTY


def test_read_transcript_reports_a_missing_file_as_a_problem(tmp_path: Path) -> None:
    read = claude_source.read_transcript(str(tmp_path / "gone.jsonl"), "s1", "m0")
    assert read.problem and "gone.jsonl" in read.problem and read.mark == "m0"
    path = session_with_tools().write(tmp_path / "s.jsonl")
    read = claude_source.read_transcript(str(path), "s1", None)
    assert read.key == "claude:s1" and len(read.messages) == 3 and read.where == str(path)


# --- Codex -----------------------------------------------------------------------------

T1, T2, T3 = payloads.TURN_1, payloads.TURN_2, "0199a5c2-9000-7000-8000-000000000003"


def entries() -> list[dict[str, object]]:
    change = {"type": "fileChange", "id": "fc_1", "status": "completed",
              "changes": [{"path": "src/app.py", "kind": "update", "diff": "+x"}]}
    return [payloads.item_entry(T1, payloads.user_message("human asks", "u1")),
            payloads.item_entry(T1, payloads.command_item("echo TOOL-OUT")),
            payloads.item_entry(T1, change),
            payloads.item_entry(T1, payloads.agent_message("codex answers", "m1")),
            payloads.item_entry(T2, payloads.user_message("notice", "u2",
                                                          client_id="h_20261201T101153_d4c149")),
            payloads.item_entry(T2, payloads.agent_message("acting on the handoff", "m2"))]


def test_codex_messages_cross_tool_items_do_not() -> None:
    parsed = codex_source.parse(entries(), None)
    assert words(parsed) == [("user", "human asks"), ("codex", "codex answers"),
                             ("codex", "acting on the handoff")]  # our own notice is left out
    assert parsed.files == ["src/app.py"]
    assert parsed.mark == f"{T2}:m2"
    assert "TOOL-OUT" not in json.dumps([m.text for m in parsed.messages])
    assert parsed.stats.verdict(codex_source.ROLES)[0] is Verdict.READABLE


def test_codex_since_a_mark_and_the_running_turn_is_not_passed() -> None:
    more = [*entries(), payloads.item_entry(T3, payloads.user_message("new ask", "u3"))]
    running = payloads.item_entry(T3, payloads.agent_message("half", "m3"))
    running["completedAtMs"] = None
    parsed = codex_source.parse([*more, running], f"{T1}:m1")
    assert parsed.found and words(parsed) == [("codex", "acting on the handoff"),
                                              ("user", "new ask")]
    assert parsed.mark == f"{T3}:u3"  # stops before the item still being written


def test_a_peer_message_is_labelled_and_handoff_ids_are_recognised() -> None:
    peer = payloads.item_entry(T1, payloads.user_message(
        "[codexbridge] from Claude Code — a peer AI agent\n\nreview this", "u5"))
    assert [m.role for m in codex_source.parse([peer], None).messages] == ["peer"]
    assert is_handoff_id(flow.new_id()) and not is_handoff_id("cb_0123") \
        and not is_handoff_id("req_1796119192908_vvd6pb")


def test_codex_unknown_item_types_alone_are_drift() -> None:
    odd = [{"turnId": T1, "item": {"type": "userUtterance", "id": "x"}, "completedAtMs": 1}]
    verdict, why = codex_source.parse(odd, None).stats.verdict(codex_source.ROLES)
    assert verdict is Verdict.DRIFTED and "userUtterance" in why
