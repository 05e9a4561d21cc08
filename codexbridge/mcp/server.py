"""Building the MCP server for one role on the official SDK's `MCPServer`.

    build_server(settings) → MCPServer with bridge_status, bridge_output_read,
                             bridge_handoff and the role's own tools

Errors the SDK produces itself (arguments that fail the input schema, an unknown tool
name) come back as bare text; a small middleware gives them the same structured shape
as ours (`INVALID_ARGUMENT`, `UNKNOWN_TOOL`), so a caller can always read
`structuredContent.error.code`.

Start-up cost: only this role's tool module is imported, and the tool modules import
what their bodies need (the app-server client, the mailbox service, the artifact store)
on the first call — `codexbridge mcp` must answer `initialize` about as fast as a bare
SDK server (bench/bench_mcp.py).
"""

from collections.abc import Callable
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent

from .. import __version__
from ..errors import UnknownToolError, UsageError
from . import tools_handoff, tools_shared
from .results import error_envelope
from .runtime import Runtime
from .settings import Settings
from .tooling import error_text

SERVER_NAME = "codexbridge"

_COMMON = (
    "Results: structuredContent is {ok, data, warnings}; a failure is a tool error with "
    "{code, message, retryable, details}. Retry only when retryable is true. Large outputs "
    "come back as an artifact: page through it with bridge_output_read (artifactId, then "
    "each nextCursor until it is null). bridge_status shows what this server talks to. "
    "bridge_handoff hands the work to the other agent when the human switches: write its "
    "note yourself (decisions, what was rejected and why, the next step).")

INSTRUCTIONS = {
    "claude": (
        "codexbridge, role claude: talk into the live Codex conversation the human watches "
        "in the Codex TUI. codex_threads_list shows the loaded threads; codex_message_send "
        "sends a message as a new turn and returns Codex's reply; codex_thread_read reads "
        "the history. Never guess between several threads: pass threadId. Never resend a "
        "message whose turn started (TURN_TIMEOUT, CODEX_CONNECTION_LOST): it may still be "
        "running — read the thread instead. " + _COMMON),
    "codex": (
        "codexbridge, role codex: talk to the Claude Code session of this project. "
        "claude_message_send leaves it a message (with no mailbox named: the session "
        "listening in this thread's project); a running session gets it at once, a stopped "
        "one when it next starts. With expectReply, Claude's answer arrives in this thread "
        "as a new turn by itself — it is not the tool result. claude_mailboxes_list shows "
        "who listens; claude_mailbox_peek shows what is still waiting. From a shell "
        "command the same is `{command} inbox push --expect-reply \"TEXT\"` (it writes "
        "outside the workspace: run it with escalated permissions). " + _COMMON),
}


def codexbridge_command() -> str:
    """How a shell runs this very codexbridge, by absolute path: Codex's commands run in
    a login shell whose PATH is reset by /etc/profile (measured), so a `codexbridge` the
    user put on PATH in their terminal is not found there."""
    import os
    import shlex
    import sys

    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(script) == "codexbridge" and os.access(script, os.X_OK):
        return shlex.quote(script)
    return f"{shlex.quote(sys.executable)} -m codexbridge"


def instructions(role: str) -> str:
    return INSTRUCTIONS[role].replace("{command}", codexbridge_command())


def _error_result(envelope: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=error_text(envelope))],
                          structured_content=envelope, is_error=True)


def _unknown_arguments(server: MCPServer) -> ServerMiddleware[Any]:
    """Refuse arguments a tool does not have (the SDK would drop them silently, and a
    misspelt `threadId` must not turn into "the only thread")."""
    async def check(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call" and isinstance(ctx.params, dict):
            name = ctx.params.get("name")
            args = ctx.params.get("arguments") or {}
            tool = server._tool_manager.get_tool(name) if isinstance(name, str) else None
            if tool is not None and isinstance(args, dict):
                known = set(tool.parameters.get("properties") or {})
                extra = sorted(set(args) - known)
                if extra:
                    import difflib  # only on this error path

                    hints = {k: m[0] for k in extra
                             if (m := difflib.get_close_matches(k, sorted(known), n=1))}
                    message = (f"{name} has no parameter {', '.join(map(repr, extra))}; "
                               f"its parameters are {', '.join(sorted(known)) or 'none'}")
                    if hints:
                        message += " (did you mean " + ", ".join(
                            f"{v!r} for {k!r}" for k, v in hints.items()) + "?)"
                    return _error_result(error_envelope(UsageError(
                        message, details={"tool": name, "unknown": extra,
                                          "didYouMean": hints})))
        return await call_next(ctx)
    return check


async def structure_sdk_errors(ctx: ServerRequestContext[Any, Any],
                               call_next: CallNext) -> HandlerResult:
    """Give the SDK's own text-only tool errors our structured error shape."""
    result = await call_next(ctx)
    if ctx.method != "tools/call":
        return result
    if isinstance(result, CallToolResult):
        result = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    if not isinstance(result, dict) or not result.get("isError") \
            or result.get("structuredContent") is not None:
        return result
    text = " ".join(str(b.get("text", "")) for b in result.get("content") or []
                    if isinstance(b, dict) and b.get("type") == "text")
    cls = UnknownToolError if "Unknown tool" in text else UsageError
    name = (ctx.params or {}).get("name")
    return _error_result(error_envelope(cls(text or f"{name} failed",
                                            details={"tool": name})))


RoleTools = tuple[tuple[str, ...], Callable[[MCPServer, Runtime], None]]


def _role_tools(role: str) -> RoleTools:
    """The role's tool names and `register`; the other role's module is never imported."""
    if role == "claude":
        from . import tools_claude

        return tools_claude.TOOLS, tools_claude.register
    from . import tools_codex

    return tools_codex.TOOLS, tools_codex.register


def build_server(settings: Settings, runtime: Runtime | None = None) -> MCPServer:
    rt = runtime or Runtime.create(settings)
    server: MCPServer = MCPServer(SERVER_NAME, version=__version__,
                                  instructions=instructions(settings.role),
                                  middleware=[structure_sdk_errors], log_level="WARNING")
    server.middleware.append(_unknown_arguments(server))
    role_tools, register_role = _role_tools(settings.role)
    tools_shared.register(server, rt, (*role_tools, *tools_handoff.TOOLS))
    register_role(server, rt)
    tools_handoff.register(server, rt)
    return server
