"""What a review loop costs, in sight (docs/tokens.md) — README's set-up at its defaults,
both real TUIs, the two mock models reporting their own, distinct token numbers
(Codex's: doctor/mock_model.USAGE per model call; Claude's: mock_claude.USAGE_START and
OUTPUT_TOKENS per call). Every number a person is shown must be exactly what the models
reported for the bridged turns:

    Claude asks Codex     the reply mail ends with codexbridge's tokens line (Codex's
                          turn, and the conversation's total); the record and `talk
                          status` say the same
    Codex asks Claude     the request's record holds what Claude's answer cost (from its
                          transcript), the reply's what Codex's turn on it cost; the
                          conversation's total is their sum
    Claude waits (MCP)    `codex_message_send` wait=true: the tool's result says what the
                          turn cost, in codexbridge's line above Codex's words
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from codexbridge.doctor.mock_model import USAGE
from tests.support.helpers import wait_until
from tests.support.mock_claude import OUTPUT_TOKENS, USAGE_START

from .conftest import Journey, fresh_text

pytestmark = [pytest.mark.real_codex, pytest.mark.real_claude, pytest.mark.tmux]

CODEX_TOOL = "mcp__plugin_codexbridge_codex__codex_message_send"


def bash(command: str) -> str:
    return "CALL_TOOL Bash " + json.dumps({"command": command})


def codex_spent(calls: int) -> dict[str, int]:
    """What Codex's mock reported for a turn of `calls` model calls."""
    details = USAGE["input_tokens_details"]
    assert isinstance(details, dict)
    n_in, out = int(str(USAGE["input_tokens"])), int(str(USAGE["output_tokens"]))
    cached = int(str(details["cached_tokens"]))
    return {"input": n_in * calls, "cached": cached * calls, "output": out * calls}


def claude_spent(calls: int) -> dict[str, int]:
    """What Claude's mock reported for `calls` model calls (the Messages API counts the
    input read from and written to the cache apart: the input is all three)."""
    u = {k: int(str(v)) for k, v in USAGE_START.items()}
    return {"input": calls * (u["input_tokens"] + u["cache_read_input_tokens"]
                              + u["cache_creation_input_tokens"]),
            "cached": calls * u["cache_read_input_tokens"], "output": calls * OUTPUT_TOKENS}


def line(t: dict[str, int], conversation: str, total: int) -> str:
    return (f"tokens: {t['input']:,} in ({t['cached']:,} cached) · {t['output']:,} out — "
            f"conversation {conversation}: {total:,}")


def codex_calls(j: Journey, words: str) -> int:
    """How many model calls Codex made with `words` as the turn's user message."""
    return sum(words in t for t in j.codex_user_texts())


def conversation(j: Journey, conv: str) -> dict[str, Any]:
    data = json.loads((j.world.bridge_home / "conversations" / f"{conv}.json").read_text())
    assert isinstance(data, dict)
    return data


def test_claude_asks_codex_and_the_reply_mail_says_what_codex_spent(journey: Journey) -> None:
    j = journey
    claude = j.claude["project"]
    # A mock turn is over in a blink — before the courier `talk send` starts has joined
    # the thread, which codex tells its usage to no more: the cost is read back from
    # codex's rollout (docs/tokens.md, "A turn its follower joined late")
    ask = "Claude asks: what does the cache layer cost us?"
    since = j.claude_mark()
    claude.send(bash(f'codexbridge talk send "{ask}"'))
    j.claude_allows()
    got = j.claude_saw(f"MOCK REPLY: {ask}", since)
    sent = [r for r in j.records() if r.get("text_preview") == ask]
    assert len(sent) == 1, j.explain("one delivery")
    rec = j.final(sent[0]["id"])
    spent = codex_spent(codex_calls(j, ask))
    assert spent["input"] > 0 and rec["tokens"] == spent, j.explain("tokens")
    conv = rec["conversation"]
    total = conversation(j, conv)["tokens"]
    assert total == spent  # the conversation's first bridged turn
    # the mail ends with codexbridge's own line, after Codex's words
    shown = fresh_text(got)
    want = line(spent, conv, spent["input"] + spent["output"])
    assert re.search(r"\[codexbridge [a-z0-9]{6}\] " + re.escape(want), shown), shown
    # `talk status` says it, and its --json
    status = j.cb("talk", "status", rec["id"]).stdout
    assert want in status, status
    assert j.cb_json("talk", "status", rec["id"])["tokens"]["conversationTotal"] == spent


def test_codex_asks_claude_and_both_sides_answers_are_counted(journey: Journey) -> None:
    j = journey
    codex = j.codex["project"]
    question = "Codex asks: is the retry budget too high?"
    since = j.claude_mark()
    rid = j.codex_asks(question)
    answer = f"CLAUDE ANSWER to {rid}: {question}"
    j.on_screen(codex, f"MOCK REPLY: {answer}")
    replies = [r for r in j.records() if r.get("in_reply_to") == rid]
    assert len(replies) == 1
    reply = j.final(replies[0]["id"])

    # Claude's answer: the calls that answered (one text reply), as its transcript has them
    asked_rec = wait_until(lambda: r if (r := j.final(rid)).get("tokens") else None, 30,
                           "the request's tokens", lambda: j.explain("tokens"))
    answered_by = [r for r in j.claude_requests(since) if rid in fresh_text(r)]
    assert asked_rec["tokens"] == claude_spent(len(answered_by[:1]))
    # Codex's turn on the answer
    assert reply["tokens"] == codex_spent(codex_calls(j, answer))
    # the conversation's total: both
    conv = asked_rec["conversation"]
    total = conversation(j, conv)["tokens"]
    assert total == {k: asked_rec["tokens"][k] + reply["tokens"][k] for k in total}
    status = j.cb("talk", "status", rid).stdout
    both = total["input"] + total["output"]
    assert line(asked_rec["tokens"], conv, both) in status, status


def test_claude_waits_for_codex_over_mcp_and_the_result_says_what_it_cost(
        journey: Journey) -> None:
    j = journey
    ask = "Claude asks and waits: which module is slowest?"
    since = j.claude_mark()
    j.claude["project"].send(f"CALL_TOOL {CODEX_TOOL} "
                             + json.dumps({"text": ask, "wait": True}))
    j.claude_allows()
    got = j.claude_saw(f"MOCK REPLY: {ask}", since)
    sent = [r for r in j.records() if r.get("text_preview") == ask]
    assert len(sent) == 1
    rec = j.final(sent[0]["id"])
    spent = codex_spent(codex_calls(j, ask))
    assert rec["tokens"] == spent
    total = conversation(j, rec["conversation"])["tokens"]
    # the tool's result as Claude got it (Claude Code hands the model its JSON; an
    # interactive session takes the call as an MCP task: the JSON inside its
    # <task-notification>)
    shown = fresh_text(got)
    result, _ = json.JSONDecoder().raw_decode(shown, shown.index('{"ok"'))
    assert result["data"]["tokens"] == {**spent, "conversation": rec["conversation"],
                                        "conversationTotal": total}
