"""What the real-binary handoff tests share: mock models that never repeat a tool's
output in the agent's own words (so "tool output never crosses" is a real check), the
CLI call, and reading the model request a handoff produced."""

from __future__ import annotations

import json
import os
from typing import Any

from codexbridge.handoff import ledger
from codexbridge.handoff.ledger import project_dir, project_key
from tests.support.cli import arun_cli
from tests.support.mock_claude import Reply as ClaudeReply
from tests.support.mock_claude import Text
from tests.support.mock_codex import MockRequest, Reply, plan_reply, text_frames

CODEX_SAID_AFTER_TOOL = "Codex: the command ran, it looks fine."
CLAUDE_SAID_AFTER_TOOL = "Claude: I ran the check and it passed."
NOTICE = "[codexbridge "  # then the seal, then "] from <agent> — <HANDOFF_LINE>"
HANDOFF_LINE = "handoff: its work moves to you"


def quiet_planner(body: Any, n: int) -> Reply:
    """The codex mock's rules, except that after a tool call Codex says a fixed sentence
    instead of quoting the output (`MOCK DONE: <output>`)."""
    reply = plan_reply(body, n)
    if reply.rule == "tool_output":
        return Reply("tool_output", frames=text_frames(CODEX_SAID_AFTER_TOOL, n))
    return reply


def quiet_claude(body: dict[str, Any], n: int) -> ClaudeReply | None:
    """The same for the Messages API mock: a tool result gets a fixed sentence."""
    msgs = [m for m in body.get("messages", []) if m.get("role") != "system"]
    last = msgs[-1] if msgs else {}
    content = last.get("content")
    if last.get("role") == "user" and isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return Text(CLAUDE_SAID_AFTER_TOOL)
    return None


async def handoff(*args: str, url: str, timeout: float = 90) -> dict[str, Any]:
    res = await arun_cli("handoff", *args, "--json", env={"CODEX_BRIDGE_URL": url},
                         timeout=timeout)
    assert res.code == 0, (res.code, res.out, res.err)
    data = json.loads(res.out)
    assert isinstance(data, dict)
    return data


def input_texts(req: MockRequest) -> list[tuple[str, str]]:
    """(role, text) of every message item in the model request's `input`."""
    out = []
    for item in req.body.get("input") or []:
        if isinstance(item, dict) and item.get("type", "message") == "message":
            content = item.get("content")
            text = content if isinstance(content, str) else "".join(
                str(c.get("text", "")) for c in content or [] if isinstance(c, dict))
            out.append((str(item.get("role")), text))
    return out


def injected_before_notice(req: MockRequest) -> str:
    """The item the handoff injected: the user message right before its visible turn."""
    texts = input_texts(req)
    assert texts and texts[-1][1].startswith(NOTICE), texts[-1:]
    role, text = texts[-2]
    assert role == "user" and text.startswith("[handoff h_"), text[:200]
    return text


def state(project: str) -> dict[str, Any]:
    """The project's ledger as its file's JSON (the real tests check what is on disk)."""
    return ledger.to_json(ledger.load(project_key(project), project_dir(project)))


def bridge_home() -> str:
    return os.environ["CODEX_BRIDGE_HOME"]
