"""Handoff on the user's path, both ways, at its defaults — README's one-line note
(`--note "Decisions: … Next: …"`) typed in a terminal in the project:

    Claude → Codex      the Codex TUI shows the handoff as a turn; Codex's model gets the
                        conversation, the decisions and the next step
    Codex → Claude      the running session gets it at once
    Codex → a stopped   the handoff waits (`waiting-for-resume`, with the command to run);
    Claude              `claude --resume ID` in the project hands it over, once
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.helpers import wait_until

from .conftest import Journey, fresh_text

pytestmark = [pytest.mark.real_codex, pytest.mark.real_claude, pytest.mark.tmux]

NOTE = "Decisions: keep sqlite for now. Next: write the migration tests"


def codex_asks_claude(j: Journey, question: str) -> str:
    """Codex asks over MCP (the human allows the write); Claude answers; the answer
    renders in the Codex TUI as a reply turn. Returns Claude's answer."""
    codex = j.codex["project"]
    since = j.claude_mark()
    call = {"text": question, "expectReply": True}
    codex.send(f"MCP_CALL: claude_message_send {json.dumps(call)}")
    codex.answer('Allow the codexbridge MCP server to run tool "claude_message_send"', "Enter")
    asked = j.claude_saw(question, since)
    request = re.search(r"request (req_\d+_[a-z0-9]+)", asked.tail_text())
    assert request is not None, asked.tail_text()
    answer = f"CLAUDE ANSWER to {request.group(1)}: {question}"
    j.on_screen(codex, f"MOCK REPLY: {answer}")
    return answer


def test_claude_hands_the_work_to_codex(journey: Journey) -> None:
    """… and what Codex already has from Claude (its answer, which came back as a reply
    turn) does not cross again."""
    j = journey
    answer = codex_asks_claude(j, "ASKED-BEFORE: is the parser done?")
    wait_until(lambda: j.transcript_has(answer), 60, "Claude's answer in its transcript",
               lambda: j.transcript_tail())
    since = j.claude_mark()
    j.claude["project"].send("CLAUDE-SIDE-WORDS: the parser is done")
    j.claude_saw("CLAUDE-SIDE-WORDS", since)
    # as the human does: the answer is on screen, and so in the transcript the handoff
    # reads (Claude Code writes it a moment after the model call: the CI run that
    # handed off right after the call found the prompt not yet written)
    j.on_screen(j.claude["project"], "CLAUDE-SIDE-WORDS: the parser is done")
    wait_until(lambda: j.transcript_has("MOCK_REPLY", "CLAUDE-SIDE-WORDS"), 60,
               "Claude's answer in its transcript", lambda: j.transcript_tail())
    calls = len(j.world.codex_mock.model_calls)
    done = j.cb("handoff", "--to", "codex", "--json", "--note", NOTE)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    delta = Path(result["delta"]).read_text()
    assert "CLAUDE-SIDE-WORDS" in delta and answer not in delta, delta
    # Codex's question reached Claude as mail: never "the human's", never back to Codex
    assert "ASKED-BEFORE" not in delta, delta
    # README's one-line note: both labels found where the user wrote them
    assert "== Decisions ==\nkeep sqlite for now." in delta, delta
    assert "== Next ==\nwrite the migration tests" in delta, delta
    j.on_screen(j.codex["project"], "handoff")
    got = j.world.codex_mock.wait_for_request(
        lambda r: r.is_model_call and "write the migration tests" in json.dumps(r.body),
        60)
    body = json.dumps(got.body)
    assert "keep sqlite for now" in body and "CLAUDE-SIDE-WORDS" in body
    assert len(j.world.codex_mock.model_calls) > calls


def test_codex_hands_the_work_to_the_running_claude(journey: Journey) -> None:
    """… without what Claude already has: the reply to its own request, which it got
    as mail."""
    j = journey
    ask = "CLAUDE-ASKED-FIRST: is the schema final?"
    asked = j.claude_mark()
    j.claude["project"].send("CALL_TOOL Bash " + json.dumps(
        {"command": f'codexbridge talk send "{ask}"'}))
    j.claude_allows()
    j.claude_saw(f"MOCK REPLY: {ask}", asked)  # Codex's reply came to Claude as mail
    since = j.claude_mark()
    j.codex["project"].send("CODEX-SIDE-WORDS: the schema is final")
    j.on_screen(j.codex["project"], "MOCK REPLY: CODEX-SIDE-WORDS")
    done = j.cb("handoff", "--to", "claude", "--json", "--note", NOTE)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["state"] == "delivered", json.dumps(result)
    got = j.claude_saw("write the migration tests", since)
    text = fresh_text(got)
    assert "CODEX-SIDE-WORDS" in text and "keep sqlite for now" in text
    assert "[the human] CODEX-SIDE-WORDS" in text  # the human typed it in the TUI
    assert f"MOCK REPLY: {ask}" not in text and ask not in text, text  # it has those


def test_codex_hands_to_a_stopped_claude_which_gets_it_on_resume_once(
        journey: Journey) -> None:
    j = journey
    session = j.session("project")
    j.claude.pop("project").stop()
    j.codex["project"].send("CODEX-AGAIN: the index is rebuilt")
    j.on_screen(j.codex["project"], "MOCK REPLY: CODEX-AGAIN")
    done = j.cb("handoff", "--to", "claude", "--json", "--note", NOTE)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["state"] == "waiting-for-resume" and result["delivered"] is False, result
    assert f"claude --resume {session}" in result["action"]
    since = j.claude_mark()
    j.open_claude("project", "--resume", session)
    j.claude["project"].send("RESUMED: what now?")
    got = j.claude_saw("RESUMED: what now?", since)
    assert "CODEX-AGAIN" in json.dumps(got.body) and "write the migration tests" in json.dumps(
        got.body)
    status = j.cb_json("handoff", "status")
    assert status["ok"] is True
    j.claude["project"].send("AGAIN-RESUMED: anything else?")
    again = j.claude_saw("AGAIN-RESUMED", since)
    # handed over once: the second turn carries no new copy of the delta
    assert json.dumps(again.body).count("CODEX-AGAIN: the index is rebuilt") == json.dumps(
        got.body).count("CODEX-AGAIN: the index is rebuilt")
