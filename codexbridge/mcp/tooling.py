"""Turning a tool body's outcome into the SDK's CallToolResult.

A tool body returns an `Outcome` (data, warnings, a one-line summary) or raises a
`ToolFailure` / a codexbridge error. `guarded()` makes sure that whatever happens the
client gets a well-formed result: never a bare exception, never an empty error.
"""

import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from ..errors import BridgeError, internal
from .results import error_envelope, ok_envelope

log = logging.getLogger("codexbridge.mcp")
ERROR_TEXT_MAX = 8000

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True,
                            destructive_hint=False, open_world_hint=False)
# A send adds a turn or a mail; nothing is overwritten, but twice is twice.
SEND = ToolAnnotations(read_only_hint=False, idempotent_hint=False,
                       destructive_hint=False, open_world_hint=False)


@dataclass
class Outcome:
    data: dict[str, Any]
    summary: str
    warnings: list[dict[str, str]] = field(default_factory=list)


def success(outcome: Outcome) -> CallToolResult:
    text = outcome.summary
    if outcome.warnings:
        text += "".join(f"\nwarning [{w['code']}]: {w['message']}" for w in outcome.warnings)
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=ok_envelope(outcome.data, outcome.warnings))


def error_text(envelope: dict[str, Any]) -> str:
    """The text of an error result. Claude Code 2.1.332 shows the model only this text
    for a tool error (not structuredContent), so it carries the whole error object."""
    err = envelope["error"]
    body = json.dumps({"error": err}, ensure_ascii=False, default=str)
    if len(body) > ERROR_TEXT_MAX:
        body = json.dumps({"error": {**err, "details": "(see structuredContent)"}},
                          ensure_ascii=False, default=str)
    return f"{err['code']}: {err['message']}\n{body}"


def failure(exc: BridgeError, warnings: list[dict[str, str]] | None = None) -> CallToolResult:
    env = error_envelope(exc, warnings)
    return CallToolResult(content=[TextContent(type="text", text=error_text(env))],
                          structured_content=env, is_error=True)


def add_tool(server: MCPServer, fn: Callable[..., Any], annotations: ToolAnnotations) -> None:
    """Register `fn` with its docstring, dedented, as the description."""
    server.add_tool(fn, description=inspect.cleandoc(fn.__doc__ or ""), annotations=annotations)


async def guarded(tool: str, body: Callable[[], Awaitable[Outcome]]) -> CallToolResult:
    try:
        return success(await body())
    except BridgeError as exc:
        return failure(exc)
    except Exception as exc:  # a bug: still answer, and leave the trace in stderr
        log.exception("tool %s crashed", tool)
        return failure(internal(exc, tool))
