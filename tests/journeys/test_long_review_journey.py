"""A real review goes back and forth twelve times, at the defaults (issue 24, item 5).

Codex and Claude take turns asking each other about one change, each asking from inside
the turn that handles the other's question — as a reviewer answers with a question of
their own:

    odd steps    Codex's turn calls `claude_message_send` with expectReply (the human
                 allows it in the Codex TUI); Claude's turn that takes the mail in asks
                 back with `talk send` (the human allows it in Claude's TUI) and its
                 final message answers Codex
    even steps   that `talk send` runs as a Codex turn, which asks the next question;
                 its final message comes back to Claude as mail

All twelve requests are one conversation (its budget travels by itself), each shows
the true `hop n/40` to the agent that gets it and to the human in the TUI, and every
answer reaches its asker once, from the turn that took the request in. With the old
default of 4 hops the fifth request was refused.
"""

from __future__ import annotations

import json
import re
import shlex

import pytest

from codexbridge.host.limits import DEFAULT_MAX_HOPS
from codexbridge.jsontypes import objs
from codexbridge.messages.frame import words_of
from tests.support.helpers import wait_until
from tests.support.mock_claude import WAITS_MARK, Reply, ToolUse, peer_answer, tool_names
from tests.support.tmux_tui import approve_claude

from .conftest import Journey, fresh_text

pytestmark = [pytest.mark.real_codex, pytest.mark.real_claude, pytest.mark.tmux]

STEPS = 12
STEP_RE = re.compile(r"REVIEW-STEP (\d+)\b")
CODEX_TOOL_PROMPT = 'run tool "claude_message_send"'


def codex_asks(step: int) -> str:
    """What a Codex turn runs to ask Claude step `step` (odd)."""
    return "MCP_CALL: claude_message_send " + json.dumps(
        {"text": f"REVIEW-STEP {step}: Codex asks, is part {step} of the change right?",
         "expectReply": True})


def claude_asks(step: int) -> str:
    """What Claude's turn sends Codex for step `step` (even): its question, and the
    instruction Codex's mock model follows to ask the next one."""
    ask = f"REVIEW-STEP {step}: Claude asks, and what about part {step}?"
    return ask + (f" {codex_asks(step + 1)}" if step < STEPS else "")


class Reviewer:
    """Claude's side of the review: a turn that takes in Codex's question `k` runs
    `talk send` with question k+1 (once each); anything else, the usual peer rules."""

    def __init__(self) -> None:
        self.asked: set[int] = set()

    def __call__(self, body: dict[str, object], n: int) -> Reply | None:
        msgs = objs(body.get("messages"))
        tail: list[str] = []
        for msg in reversed(msgs):
            if msg.get("role") == "assistant":
                break
            content = msg.get("content")
            tail.insert(0, json.dumps(content) if not isinstance(content, str) else content)
        text = "\n".join(tail)
        # only a call that offers tools is the turn itself (not a side call on its text)
        if WAITS_MARK in text and "Bash" in tool_names(body):
            questions = sorted({int(k) for k in STEP_RE.findall(text)
                                if int(k) % 2 == 1 and int(k) not in self.asked})
            if questions and questions[-1] < STEPS:
                step = questions[-1]
                self.asked.add(step)
                return ToolUse("Bash", {"command": "codexbridge talk send "
                                        + shlex.quote(claude_asks(step + 1))})
        return peer_answer(body, n)


def test_a_twelve_exchange_review_at_the_defaults(journey: Journey) -> None:
    j = journey
    codex, claude = j.codex["project"], j.claude["project"]
    j.world.claude_mock.responder = Reviewer()
    try:
        since = j.claude_mark()
        codex.send(codex_asks(1))
        codex.answer(CODEX_TOOL_PROMPT, "Enter")           # step 1: Codex → Claude
        for step in range(2, STEPS + 1):
            if step % 2 == 0:                               # Claude → Codex (talk send)
                approve_claude(claude, timeout=120)
            else:                                           # Codex → Claude (its tool)
                codex.answer(CODEX_TOOL_PROMPT, "Enter", timeout=120)
        asks = wait_until(lambda: _requests(j) if len(_requests(j)) == STEPS else None, 120,
                          "the twelve requests", lambda: j.explain("twelve requests"))
        for rec in asks:
            j.final(rec["id"], timeout=120)
    finally:
        j.world.claude_mock.responder = peer_answer
    asks = _requests(j)
    # one conversation, hops 1..12 of the default budget, alternating
    assert {r["conversation"] for r in asks} == {asks[0]["conversation"]}, [
        (r["hop"], r["direction"], r["conversation"], r["state"]) for r in asks]
    assert [(r["hop"], r["max_hops"]) for r in asks] == [
        (n, DEFAULT_MAX_HOPS) for n in range(1, STEPS + 1)]
    assert [r["direction"] for r in asks] == ["to-claude", "to-codex"] * (STEPS // 2)
    assert all(j.record(r["id"])["state"] == "delivered" for r in asks), [
        (r["id"], j.record(r["id"])["state"], j.record(r["id"]).get("reason")) for r in asks]
    trail = json.loads((j.world.bridge_home / "conversations"
                        / f"{asks[0]['conversation']}.json").read_text())
    assert [h["direction"] for h in trail["hops"]] == \
        ["codex→claude", "claude→codex"] * (STEPS // 2)
    codex_texts = j.codex_user_texts()
    for step, rec in enumerate(asks, 1):
        rid, hop_line = rec["id"], f"hop {step}/{DEFAULT_MAX_HOPS} · request {rec['id']}"
        if step % 2:  # Codex asked: Claude was shown the true hop line ...
            assert any(hop_line in fresh_text(r) for r in j.claude_requests(since)), \
                j.explain(hop_line, since)
            # ... and its answer, once, is the final message of the turn that took the
            # question in — one that asked back: it names a request Claude sent after
            # this one. (Measured: each question reaches Claude beside the result of its
            # last `talk send` — mid-turn — so the mock's one turn takes all six in and
            # its one final message answers them all, at its end: the rule, as designed.)
            turns = [t for t in codex_texts if f"reply to {rid}" in t]
            assert len(turns) == 1, (rid, turns)
            answer = words_of(turns[0])
            if step < STEPS:
                assert any(later["id"] in answer for later in asks[step::2]), (rid, answer)
            replies = [r for r in j.records() if r.get("in_reply_to") == rid]
            assert len(replies) == 1 and j.final(replies[0]["id"])["state"] == "delivered"
        else:  # Claude asked: Codex (and the human, in the TUI) saw the true hop line ...
            assert any(hop_line in t for t in codex_texts), (hop_line, rid)
            # ... and Codex's answer came back to Claude by itself, once
            assert j.record(rid)["reply_mail_id"]
            got = [r for r in j.claude_requests(since)
                   if rid in fresh_text(r) and "Reply from Codex" in fresh_text(r)]
            assert got, j.explain(f"Codex's answer to {rid}", since)
    j.on_screen(codex, f"hop {STEPS}/{DEFAULT_MAX_HOPS}")  # what the human sees
    def ended(rec: dict[str, object]) -> float:  # when it became `delivered`
        steps = j.record(str(rec["id"]))["history"]
        return float([s["at"] for s in steps if s["state"] == "delivered"][-1])

    spent = [ended(r) - float(str(r["created_at"])) for r in asks]
    whole = ended(asks[-1]) - float(str(asks[0]["created_at"]))
    # what the review cost (docs/tokens.md): the conversation's running total is what
    # its deliveries recorded — both agents' turns, each counted once
    ours = [r for r in j.records() if r["conversation"] == asks[0]["conversation"]]
    counted = [r["tokens"] for r in ours if r.get("tokens")]
    total = json.loads((j.world.bridge_home / "conversations"
                        / f"{asks[0]['conversation']}.json").read_text())["tokens"]
    assert counted and total == {k: sum(t[k] for t in counted) for k in total}, counted
    # every Codex turn the review ran is counted, the short ones its courier joined
    # late too (read back from codex's rollout)
    assert all(r.get("tokens") for r in ours if r["direction"] == "to-codex"
               and r["state"] == "delivered"), j.explain("each Codex turn's tokens")
    print(f"\nlong review: {STEPS} requests, each asked → answered in "
          f"{min(spent):.1f}–{max(spent):.1f} s; the whole review {whole:.1f} s; "
          f"{total['input'] + total['output']:,} tokens over {len(counted)} of "
          f"{len(ours)} deliveries (" + ", ".join(
              f"{d} {sum(1 for r in ours if r['direction'] == d and r.get('tokens'))}/"
              f"{sum(1 for r in ours if r['direction'] == d)}"
              for d in ("to-codex", "to-claude")) + ")")


def _requests(j: Journey) -> list[dict[str, object]]:
    """The review's requests (not the answers), in order."""
    return [r for r in j.records() if "REVIEW-STEP" in str(r.get("text_preview"))
            and not r.get("in_reply_to")]
