"""The mock Anthropic Messages API's rules — pure: a request body in, a reply out.

Stateless rules (../shared/reference/claude-code.md §3), applied to the tail of the
conversation after dropping `role:"system"` entries:

    tail is a user tool_result answering a ToolSearch  → the tool_use that was asked for
    any other user tool_result                         → text "TOOL_RESULT_SEEN: <result>"
    last user text holds `CALL_TOOL <name> <json>`     → tool_use <name> <json>, or first
                                                         ToolSearch "select:<name>" when
                                                         <name> is not in `tools` yet
                                                         (deferred MCP tools)
    anything else                                      → text "MOCK_REPLY #<n>: <tail>"

Every request is logged (`.requests`) with its parsed body and headers. Tests can add an
`on_request` callback (runs before the reply, e.g. to drop mail into a mailbox while the
model "thinks") and a `responder` that overrides the rules for some requests.

    with MockMessages() as mock:
        env["ANTHROPIC_BASE_URL"] = mock.url
        ...
        assert "MAIL" in mock.stop_feedback()[0]
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

FEEDBACK_MARK = "Stop hook feedback:"
CALL_TOOL_RE = re.compile(r"CALL_TOOL\s+(\S+)\s+(?=\{)")
TOOL_SEARCH = "ToolSearch"


# --- replies ------------------------------------------------------------------------

@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class ToolUse:
    name: str
    input: dict[str, Any]


Reply = Text | ToolUse


# --- reading a request --------------------------------------------------------------

def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _block_text(block: dict[str, Any]) -> str:
    if block.get("type") == "text":
        return str(block.get("text", ""))
    if block.get("type") == "tool_result":
        content = block.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def conversation(body: dict[str, Any]) -> list[dict[str, Any]]:
    """`messages` without the `role:"system"` entries Claude Code mixes in."""
    return [m for m in body.get("messages", []) if isinstance(m, dict)
            and m.get("role") != "system"]


def parse_call_tool(text: str) -> tuple[str, dict[str, Any]] | None:
    """`CALL_TOOL <name> <json object>` anywhere in `text` (the last one wins)."""
    found = None
    for match in CALL_TOOL_RE.finditer(text):
        try:
            args, _ = json.JSONDecoder().raw_decode(text, match.end())
        except ValueError:
            continue
        if isinstance(args, dict):
            found = (match.group(1), args)
    return found


def feedback_of(text: str) -> str | None:
    """The reason in a `Stop hook feedback:` block, without the reminder wrapper."""
    if FEEDBACK_MARK not in text:
        return None
    reason = text.split(FEEDBACK_MARK, 1)[1]
    reason = reason.split("</system-reminder>", 1)[0]
    return reason.strip("\n")


@dataclass
class RecordedRequest:
    index: int
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    body: dict[str, Any] | None
    at: float = field(default_factory=time.time)
    done_at: float | None = None  # when the last event of the answer went out

    @property
    def session_id(self) -> str | None:
        return self.headers.get("x-claude-code-session-id")

    @property
    def is_model_call(self) -> bool:
        return self.method == "POST" and self.path.split("?", 1)[0] == "/v1/messages"

    @property
    def messages(self) -> list[dict[str, Any]]:
        return conversation(self.body or {})

    @property
    def tool_names(self) -> set[str]:
        return {str(t.get("name")) for t in (self.body or {}).get("tools", [])
                if isinstance(t, dict)}

    def last_user_texts(self) -> list[str]:
        msgs = self.messages
        if not msgs or msgs[-1].get("role") != "user":
            return []
        return [_block_text(b) for b in _blocks(msgs[-1]) if b.get("type") == "text"]

    def stop_feedback(self) -> str | None:
        """The Stop-hook reason this request carries in its last user message, if any."""
        for text in reversed(self.last_user_texts()):
            reason = feedback_of(text)
            if reason is not None:
                return reason
        return None

    def all_text(self) -> str:
        """Every text in the request (system entries and tool results included)."""
        parts: list[str] = []
        for msg in (self.body or {}).get("messages", []):
            if isinstance(msg, dict):
                parts.extend(_block_text(b) for b in _blocks(msg))
        return "\n".join(parts)

    def tail_text(self) -> str:
        """Text of the last (non-system) message, all blocks."""
        msgs = self.messages
        return "\n".join(_block_text(b) for b in _blocks(msgs[-1])) if msgs else ""


# --- the rules ----------------------------------------------------------------------

def _find_tool_use(msgs: list[dict[str, Any]], tool_use_id: str) -> dict[str, Any] | None:
    for msg in reversed(msgs):
        if msg.get("role") != "assistant":
            continue
        for block in _blocks(msg):
            if block.get("type") == "tool_use" and block.get("id") == tool_use_id:
                return block
    return None


def _call_tool_for(msgs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """Arguments of the latest CALL_TOOL instruction for `name` in a user text."""
    for msg in reversed(msgs):
        if msg.get("role") != "user":
            continue
        for block in reversed(_blocks(msg)):
            if block.get("type") != "text":
                continue
            found = parse_call_tool(_block_text(block))
            if found and found[0] == name:
                return found[1]
    return {}


def default_reply(body: dict[str, Any], n: int) -> Reply:
    """The rule set from the module docstring."""
    msgs = conversation(body)
    if not msgs:
        return Text(f"MOCK_REPLY #{n}: (no messages)")
    last = msgs[-1]
    blocks = _blocks(last)
    results = [b for b in blocks if b.get("type") == "tool_result"]
    if last.get("role") == "user" and results:
        result = results[-1]
        asked = _find_tool_use(msgs, str(result.get("tool_use_id")))
        if asked is not None and asked.get("name") == TOOL_SEARCH:
            query = str((asked.get("input") or {}).get("query", ""))
            name = query.split("select:", 1)[1].split(",")[0].strip() \
                if "select:" in query else query.strip()
            return ToolUse(name, _call_tool_for(msgs, name))
        return Text(f"TOOL_RESULT_SEEN: {_block_text(result)}")
    texts = [_block_text(b) for b in blocks if b.get("type") == "text"]
    last_text = texts[-1] if texts else ""
    call = parse_call_tool(last_text) if last.get("role") == "user" else None
    if call is not None:
        name, args = call
        tools = {str(t.get("name")) for t in body.get("tools", []) if isinstance(t, dict)}
        if name in tools:
            return ToolUse(name, args)
        return ToolUse(TOOL_SEARCH, {"query": f"select:{name}", "max_results": 1})
    tail = " ".join(last_text.split())[-200:]
    return Text(f"MOCK_REPLY #{n}: {tail}")


# --- a Claude that answers its peer ---------------------------------------------------

REQUEST_RE = re.compile(r"request (req_\d+_[a-z0-9]+)")
WAITS_MARK = "Codex waits for your answer"
ANSWER_PREFIX = "CLAUDE ANSWER to "


def peer_answer(body: dict[str, Any], n: int) -> Reply | None:
    """A `responder` for the offline world: a Codex request that waits for an answer
    (codexbridge's mail, however it arrived) is answered `CLAUDE ANSWER to <request>:
    <the question>` — unless it asks for a tool (`CALL_TOOL`), which the default rules
    do. Anything else: None (the default rules)."""
    msgs = [m for m in body.get("messages", []) if isinstance(m, dict)]
    if not msgs or msgs[-1].get("role") == "assistant":
        return None
    # Everything since the model last spoke — mail delivered during a tool call comes as
    # a `role:"system"` entry beside the tool result (measured, 2.1.332).
    tail: list[dict[str, Any]] = []
    for msg in reversed(msgs):
        if msg.get("role") == "assistant":
            break
        tail.insert(0, msg)
    text = "\n".join(_block_text(b) for m in tail for b in _blocks(m))
    # Mail that came during a tool call (a `system` entry beside the tool result) asks for
    # a tool: a model acts on it, where the plain rules would only note the tool result.
    mail = "\n".join(_block_text(b) for m in tail if m.get("role") == "system"
                     for b in _blocks(m))
    call = parse_call_tool(mail) if mail else None
    if call is not None:
        tools = {str(t.get("name")) for t in body.get("tools", []) if isinstance(t, dict)}
        if call[0] in tools:
            return ToolUse(call[0], call[1])
        return ToolUse(TOOL_SEARCH, {"query": f"select:{call[0]}", "max_results": 1})
    if WAITS_MARK not in text or parse_call_tool(text) is not None:
        return None
    found = REQUEST_RE.findall(text)
    if not found:
        return None
    question = _question(text)
    return Text(f"{ANSWER_PREFIX}{found[-1]}: {question}")


def _question(text: str) -> str:
    """The mail's own words: the line after codexbridge's bracketed envelope lines."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("[Codex waits for your answer"):
            rest = [x for x in lines[i + 1:] if x.strip()]
            return " ".join(rest[0].split())[:200] if rest else ""
    return ""
