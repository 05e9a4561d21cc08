"""What a tool gives back: the shape of every result, and the error codes (the error
tree's, `errors.py`).

Success: `structuredContent = {"ok": true, "data": {...}, "warnings": [...]}` and a short
text summary. Failure: a tool error (`isError: true`) whose structured content is
`{"ok": false, "error": {"code", "message", "retryable", "details"}, "warnings": []}`,
with the message as text. The code and `retryable` come from the error's class;
`retryable` is true only when nothing happened yet, so a retry cannot run anything
twice: a turn that has started is never retryable.

A tool body returns an `Outcome` (data, warnings, a one-line summary) or raises a
codexbridge error. `guarded()` makes sure that whatever happens the client gets a
well-formed result: never a bare exception, never an empty error.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mcp_types import CallToolResult, TextContent

from ..error_tables import mcp_codes
from ..errors import (
    BridgeError,
    ConnectionLostError,
    RequestTimeoutError,
    RpcError,
    internal,
)
from ..jsontypes import JsonRecord

if TYPE_CHECKING:
    from ..jsontypes import JsonObject, JsonValue

log = logging.getLogger(__name__)
ERROR_TEXT_MAX = 8000

# code → (retryable, meaning), rendered from the error tree; docs/mcp.md shows it.
CODES: dict[str, tuple[bool, str]] = mcp_codes()

Data = dict[str, object]  # a result's `data`: only serialized, never read back here
Warnings = list[dict[str, str]]  # [{code, message}]


# --- what the middleware (server.py) reads of a `tools/call` and of the SDK's answer -----

class ToolCall(JsonRecord):
    """A `tools/call` request's params: the tool's name and its arguments, as sent."""

    name: JsonValue = None
    arguments: JsonValue = None


class InputSchema(JsonRecord):
    """A tool's input schema: the parameters it has."""

    properties: JsonObject = {}  # noqa: RUF012 (a record is read-only: never changed in place)


class TextBlock(JsonRecord, wire={"kind": "type"}):
    """One block of a result's `content` (only a text block's words are read)."""

    kind: str | None = None
    text: JsonValue = ""


class SdkResult(JsonRecord, wire={"is_error": "isError",
                                  "structured_content": "structuredContent"}):
    """A `tools/call` result as the SDK gives it: an error in bare text has no
    `structuredContent` (server.py gives it ours)."""

    is_error: bool = False
    structured_content: JsonValue = None
    content: tuple[TextBlock, ...] = ()

    @property
    def text(self) -> str:
        return " ".join(str(b.text) for b in self.content if b.kind == "text")


@dataclass
class Outcome:
    data: Data
    summary: str
    warnings: Warnings = field(default_factory=list)


def warning(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}


def ok_envelope(data: Data, warnings: Warnings | None = None) -> Data:
    return {"ok": True, "data": data, "warnings": list(warnings or [])}


def error_envelope(exc: BridgeError, warnings: Warnings | None = None) -> Data:
    """The structured content of a failed tool call.

    After `turn/start` went out (`details.turnStarted`) nothing is retryable, whatever
    the error, and a connection that broke (or went silent) is reported as
    CODEX_CONNECTION_LOST — the turn may be running.
    """
    code, retryable = exc.mcp_code, exc.retryable
    details = dict(exc.details)
    if details.get("turnStarted") is True:
        retryable = False
        if isinstance(exc, (ConnectionLostError, RequestTimeoutError)) or type(exc) is RpcError:
            code = ConnectionLostError.mcp_code
    return {"ok": False,
            "error": {"code": code, "message": exc.message, "retryable": retryable,
                      "details": details},
            "warnings": list(warnings or [])}


# -- the SDK's CallToolResult ---------------------------------------------------------------

def success(outcome: Outcome) -> CallToolResult:
    text = outcome.summary
    if outcome.warnings:
        text += "".join(f"\nwarning [{w['code']}]: {w['message']}" for w in outcome.warnings)
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=ok_envelope(outcome.data, outcome.warnings))


def error_text(envelope: Data) -> str:
    """The text of an error result. Claude Code 2.1.332 shows the model only this text
    for a tool error (not structuredContent), so it carries the whole error object."""
    err = envelope["error"]
    assert isinstance(err, dict)
    body = json.dumps({"error": err}, ensure_ascii=False, default=str)
    if len(body) > ERROR_TEXT_MAX:
        body = json.dumps({"error": {**err, "details": "(see structuredContent)"}},
                          ensure_ascii=False, default=str)
    return f"{err['code']}: {err['message']}\n{body}"


def error_result(envelope: Data) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=error_text(envelope))],
                          structured_content=envelope, is_error=True)


def failure(exc: BridgeError, warnings: Warnings | None = None) -> CallToolResult:
    return error_result(error_envelope(exc, warnings))


async def guarded(tool: str, body: Awaitable[Outcome]) -> CallToolResult:
    """`body`'s outcome as a result; its codexbridge error as an error result; anything
    else as INTERNAL (a bug: still answer, and leave the trace in stderr)."""
    try:
        return success(await body)
    except BridgeError as exc:
        return failure(exc)
    except Exception as exc:
        log.exception("tool %s crashed", tool)
        return failure(internal(exc, tool))
