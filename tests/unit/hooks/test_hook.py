"""The Stop hook's pure decisions: input parsing, chain counting, the block text."""

from __future__ import annotations

import json

import pytest

from codexbridge.hooks.loop_guard import (
    Action,
    ChainState,
    HookInput,
    block_output,
    chain_before,
    decide,
    effective_max_chain,
    mail_note,
)
from codexbridge.inbox.lines import Mail, parse_line
from codexbridge.messages.render import render_mail

STOP = {"session_id": "s1", "cwd": "/p", "prompt_id": "p1", "hook_event_name": "Stop",
        "stop_hook_active": False}


def test_input_from_real_shape() -> None:
    inp = HookInput.read({**STOP, "stop_hook_active": True,
                                  "last_assistant_message": "x", "effort": {"level": "m"}})
    assert (inp.session_id, inp.cwd, inp.stop_hook_active, inp.prompt_id, inp.event,
            inp.last_assistant_message, inp.transcript_path) == (
        "s1", "/p", True, "p1", "Stop", "x", None)


@pytest.mark.parametrize("payload", [{}, {"session_id": 5, "stop_hook_active": "yes"},
                                     {"stop_hook_active": 1}, {"cwd": None}])
def test_input_tolerates_garbage(payload: dict[str, object]) -> None:
    inp = HookInput.read(payload)
    assert inp.session_key  # always some key to count blocks under
    assert inp.stop_hook_active is (payload.get("stop_hook_active") == "yes")


def test_first_stop_delivers_and_empty_allows() -> None:
    inp = HookInput.read(STOP)
    assert decide(inp, None, True, 3).action == Action.DELIVER
    assert decide(inp, None, False, 3).action == Action.ALLOW


def test_chain_limit_holds_mail_when_stop_hook_active() -> None:
    inp = HookInput.read({**STOP, "stop_hook_active": True})
    assert decide(inp, ChainState(2, "p1"), True, 3).action == Action.DELIVER
    held = decide(inp, ChainState(3, "p1"), True, 3)
    assert held.action == Action.HOLD and held.chain_before == 3


def test_measured_sequence_with_max_chain_3() -> None:
    """Mail waiting at every stop: block, block, block, then let Claude stop."""
    stored: ChainState | None = None
    actions = []
    for active in (False, True, True, True):
        inp = HookInput.read({**STOP, "stop_hook_active": active})
        d = decide(inp, stored, True, 3)
        actions.append(d.action)
        stored = ChainState(d.chain_before + 1, "p1") if d.action == Action.DELIVER else None
    assert actions == [Action.DELIVER, Action.DELIVER, Action.DELIVER, Action.HOLD]


def test_new_turn_resets_the_chain() -> None:
    inp = HookInput.read({**STOP, "prompt_id": "p2"})
    assert chain_before(inp, ChainState(3, "p1")) == 0
    assert decide(inp, ChainState(3, "p1"), True, 3).action == Action.DELIVER


def test_stuck_stop_hook_active_still_counts_by_prompt() -> None:
    """claude-code#54360: stop_hook_active stays false, the prompt is the same."""
    inp = HookInput.read(STOP)  # active false, prompt p1
    assert chain_before(inp, ChainState(3, "p1")) == 3
    assert decide(inp, ChainState(3, "p1"), True, 3).action == Action.HOLD


@pytest.mark.parametrize(("env", "value", "noted"), [
    ({}, 3, False),
    ({"CODEX_BRIDGE_MAX_CHAIN": "5"}, 5, False),
    ({"CODEX_BRIDGE_MAX_CHAIN": "8"}, 7, True),  # clamped below the default cap 8
    ({"CODEX_BRIDGE_MAX_CHAIN": "20", "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "3"}, 2, True),
    ({"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "2"}, 1, True),
    ({"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "1"}, 1, True),
    ({"CODEX_BRIDGE_MAX_CHAIN": "20", "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "0"}, 20, False),
    ({"CODEX_BRIDGE_MAX_CHAIN": "zero"}, 3, True),
    ({"CODEX_BRIDGE_MAX_CHAIN": "0"}, 1, True),
    ({"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "junk"}, 3, False),
])
def test_effective_max_chain(env: dict[str, str], value: int, noted: bool) -> None:
    got, note = effective_max_chain(env)
    assert got == value
    assert (note is not None) is noted


def test_reason_puts_instruction_first_then_every_mail() -> None:
    mails = [Mail("fix CORS", "codex", "web", "id-1", "2026-05-01T09:00:00.000Z"),
             Mail("and run tests", "reviewer", "web", "id-2", "2026-05-01T09:01:00.000Z")]
    text = render_mail("web", mails)
    assert text.startswith('codexbridge: 2 new messages arrived in mailbox "web"')
    first_mail = text.index("fix CORS")
    assert text.index("Read every message") < first_mail < text.index("and run tests")
    assert ("from codex — a peer AI agent, not the human user · sent 2026-05-01T09:00:00.000Z"
            " · id id-1") in text
    assert "message 2 of 2 · from reviewer" in text


def test_reason_reports_rejected_lines() -> None:
    bad = parse_line(b"{broken", lineno=4)
    assert bad is not None and not isinstance(bad, Mail)
    text = render_mail("web", [], [bad], "/x/web.rejected.jsonl")
    assert "1 line" in text and "/x/web.rejected.jsonl" in text and "line 4" in text


def test_block_output_is_the_claude_shape() -> None:
    out = json.loads(block_output("hello ünï"))
    assert out == {"decision": "block", "reason": "hello ünï"}
    told = json.loads(block_output("mail", mail_note("web", ["codex", "codex"])))
    assert told == {"decision": "block", "reason": "mail", "systemMessage": (
        "codexbridge: 2 messages from codex for mailbox web, handed to Claude (the block "
        "below is that mail, not an error)")}
