"""What the mock model answers: decided from the request body alone, first match wins.

    text.format.type == "json_schema"        -> the schema's object, e.g. {"title":"Mock title"}
    last input item is function_call_output  -> "MOCK DONE: <first 200 chars of the output>"
    user text contains FAIL_TURN             -> HTTP 500 (with retries 0 codex fails the turn)
    user text contains BIG:<n>               -> exactly n bytes of `big_text(n)`, 8 KiB deltas
    user text contains RUN_SANDBOXED: <cmd>  -> exec_command, no escalation (sandboxed, no approval)
    user text contains RUN: <cmd>, tools     -> exec_command with require_escalated (an approval)
    user text contains MCP_CALL: <tool> <json> and an MCP namespace offers <tool>
                                             -> a namespaced function_call of that tool
    user text contains ASK_CLAUDE: <text>    -> exec_command (escalated) of the `inbox push
                                                --expect-reply` line codexbridge's MCP
                                                instructions give, with <text> — what a
                                                model told only those instructions runs
    anything else                            -> "MOCK REPLY: <user text>" in 8-char deltas
                                                (a codexbridge envelope header is read, not
                                                echoed: the words after it are)

`SLOW` anywhere in the user text puts 0.25 s between deltas, so a test can act mid-turn.
`HOLD:<key>` (with the plain reply) stops the stream after its first delta until the test
releases the key (`MockResponsesServer.release`): a turn that runs exactly as long as the
test needs, with no timing guesses.
How codex 0.169.0 offers MCP tools (one `namespace` tool per server) is measured in
docs/protocol-notes.md, "MCP tools in codex". Pure: a body in, a `Reply` out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .sse import exec_command_frames, function_call_frames, text_frames

REPLY_PREFIX = "MOCK REPLY: "
ENVELOPE_MARK = "[codexbridge] from "
DONE_PREFIX = "MOCK DONE: "
BIG_DELTA_BYTES = 8 * 1024
BIG_MAX_BYTES = 128 * 1024 * 1024
SLOW_DELAY_S = 0.25
FAIL_STATUS = 500

_BIG_RE = re.compile(r"BIG:(\d+)")
_RUN_SANDBOXED_RE = re.compile(r"RUN_SANDBOXED:[ \t]*([^\r\n]+)")
_RUN_RE = re.compile(r"(?<![A-Z_])RUN:[ \t]*([^\r\n]+)")
_HOLD_RE = re.compile(r"HOLD:([A-Za-z0-9_-]+)")
_MCP_CALL_RE = re.compile(r"MCP_CALL:\s*(\S+)\s+(\{.*\})", re.S)
_ASK_CLAUDE_RE = re.compile(r"ASK_CLAUDE:[ \t]*([^\r\n]+)")
_PUSH_LINE_RE = re.compile(r"`([^`]*?) inbox push --expect-reply")

_BIG_LINE_WIDTH = 64
_BIG_FILL = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ" * 2


def big_text(n: int) -> str:
    """Exactly `n` ASCII bytes of numbered 64-byte lines; what `BIG:<n>` makes the mock reply."""
    if n <= 0:
        return ""
    lines = -(-n // _BIG_LINE_WIDTH)
    body = "".join(
        (f"BIG {i:08d} " + _BIG_FILL)[: _BIG_LINE_WIDTH - 1] + "\n" for i in range(lines))
    return body[:n]


def words_of(user: str) -> str:
    """The message without the envelope header codexbridge puts above a peer's words."""
    if user.startswith(ENVELOPE_MARK) and "\n\n" in user:
        return user.split("\n\n", 1)[1]
    return user


def extract_user_text(body: Any) -> str | None:
    """The text of the last user message in `input[]` (its `input_text` parts joined)."""
    if not isinstance(body, dict):
        return None
    items = body.get("input")
    if not isinstance(items, list):
        return None
    for item in reversed(items):
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        if item.get("type", "message") != "message":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(
                str(part.get("text", "")) for part in content
                if isinstance(part, dict) and part.get("type") == "input_text")
    return None


@dataclass
class Reply:
    """What the mock sends back for one model call: a status, then SSE frames."""

    rule: str
    status: int = 200
    frames: list[bytes] = field(default_factory=list)
    delta_delay: float = 0.0
    error_body: dict[str, Any] | None = None
    hold: str | None = None  # wait for this gate after the first delta


def namespace_of(tools: Any, tool: str) -> str | None:
    """The MCP namespace (`mcp__<server>`) among the offered tools that has `tool`."""
    for entry in tools if isinstance(tools, list) else []:
        if isinstance(entry, dict) and entry.get("type") == "namespace" and any(
                isinstance(t, dict) and t.get("name") == tool for t in entry.get("tools") or []):
            return str(entry["name"])
    return None


def _schema_object(schema: Any) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    out: dict[str, Any] = {}
    for name, spec in (props or {}).items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), None)
        out[name] = {"integer": 0, "number": 0, "boolean": False, "array": [],
                     "object": {}}.get(str(kind), f"Mock {name}")
    return out


def plan_reply(body: Any, n: int) -> Reply:
    """Decide the whole answer to one model call from its body (`n` makes ids unique)."""
    if not isinstance(body, dict):
        return Reply("bad_request", status=400,
                     error_body={"error": {"message": "mock: body is not a JSON object"}})
    fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        text = json.dumps(_schema_object(fmt.get("schema")), separators=(",", ":"))
        return Reply("json_schema", frames=text_frames(text, n))
    items = body.get("input")
    last = items[-1] if isinstance(items, list) and items else None
    if isinstance(last, dict) and last.get("type") == "function_call_output":
        output = last.get("output")
        if not isinstance(output, str):
            output = json.dumps(output)
        return Reply("tool_output", frames=text_frames(DONE_PREFIX + output[:200], n))
    user = extract_user_text(body) or ""
    delay = SLOW_DELAY_S if "SLOW" in user else 0.0
    if "FAIL_TURN" in user:
        return Reply("fail", status=FAIL_STATUS, error_body={"error": {
            "message": "mock model failure (FAIL_TURN)", "type": "server_error",
            "code": "server_error", "param": None}})
    big = _BIG_RE.search(user)
    if big:
        size = min(int(big.group(1)), BIG_MAX_BYTES)
        return Reply("big", frames=text_frames(big_text(size), n, BIG_DELTA_BYTES),
                     delta_delay=delay)
    mcp = _MCP_CALL_RE.search(user)
    if mcp:
        namespace = namespace_of(body.get("tools"), mcp.group(1))
        if namespace is not None:
            return Reply("mcp_call", frames=function_call_frames(
                mcp.group(1), mcp.group(2), n, namespace=namespace))
    ask = _ASK_CLAUDE_RE.search(user)
    if ask:
        return _ask_claude(body.get("tools"), ask.group(1).strip(), n)
    sandboxed = _RUN_SANDBOXED_RE.search(user)
    if sandboxed:
        return Reply("run_sandboxed",
                     frames=exec_command_frames(sandboxed.group(1).strip(), n, escalate=False))
    run = _RUN_RE.search(user)
    if run and body.get("tools"):
        return Reply("run", frames=exec_command_frames(run.group(1).strip(), n, escalate=True))
    hold = _HOLD_RE.search(user)
    return Reply("reply", frames=text_frames(REPLY_PREFIX + words_of(user), n),
                 delta_delay=delay,
                 hold=hold.group(1) if hold else None)


def _ask_claude(tools: Any, text: str, n: int) -> Reply:
    """Run what codexbridge's instructions (the MCP namespace's description) say runs
    `inbox push` — nothing of our own: a wrong or missing line shows as a failed turn."""
    import shlex

    for entry in tools if isinstance(tools, list) else []:
        if isinstance(entry, dict) and entry.get("type") == "namespace":
            found = _PUSH_LINE_RE.search(str(entry.get("description") or ""))
            if found:
                cmd = f"{found.group(1)} inbox push --expect-reply {shlex.quote(text)}"
                return Reply("ask_claude", frames=exec_command_frames(cmd, n, escalate=True))
    return Reply("ask_claude", frames=text_frames(
        "MOCK: my instructions name no `inbox push` command", n))
