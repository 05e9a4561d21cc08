"""Building the MCP server for one role on the official SDK's `MCPServer`.

    build_server(settings) → MCPServer with the role's tools: `catalogue()` lists them,
                             in `tools/list` order, with their annotations

Errors the SDK produces itself (arguments that fail the input schema, an unknown tool
name) come back as bare text; a small middleware gives them the same structured shape
as ours (`INVALID_ARGUMENT`, `UNKNOWN_TOOL`), so a caller can always read
`structuredContent.error.code`.

Start-up cost: only this role's tool module is imported, and the tool modules import
what their bodies need (the app-server client, the engine, the handoff) on the first
call — `codexbridge mcp` must answer `initialize` about as fast as a bare
SDK server (bench/bench_mcp.py).
"""

import inspect
import os
import shlex
import sys
from collections.abc import Awaitable, Callable
from typing import IO

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.extension import Extension
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp_types import CallToolResult, ToolAnnotations

from .. import __version__
from ..errors import UnknownToolError, UsageError
from .bridge_tools import BridgeTools, HandoffToClaude, HandoffToCodex
from .results import InputSchema, SdkResult, ToolCall, error_envelope, error_result
from .runtime import Runtime
from .settings import Settings

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
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(script) == "codexbridge" and os.access(script, os.X_OK):
        return shlex.quote(script)
    return f"{shlex.quote(sys.executable)} -m codexbridge"


def instructions(role: str) -> str:
    return INSTRUCTIONS[role].replace("{command}", codexbridge_command())


def _unknown_arguments(server: MCPServer) -> ServerMiddleware[object]:
    """Refuse arguments a tool does not have (the SDK would drop them silently, and a
    misspelt `threadId` must not turn into "the only thread")."""
    async def check(ctx: ServerRequestContext[object, object],
                    call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call" and isinstance(ctx.params, dict):
            call = ToolCall.read(ctx.params)
            name, args = call.name, call.arguments or {}
            tool = server._tool_manager.get_tool(name) if isinstance(name, str) else None
            if tool is not None and isinstance(args, dict):
                known = set(InputSchema.read(tool.parameters).properties)
                extra = sorted(set(args) - known)
                if extra:
                    import difflib  # lazy: only on this error path, not the cold start

                    hints = {k: m[0] for k in extra
                             if (m := difflib.get_close_matches(k, sorted(known), n=1))}
                    message = (f"{name} has no parameter {', '.join(map(repr, extra))}; "
                               f"its parameters are {', '.join(sorted(known)) or 'none'}")
                    if hints:
                        message += " (did you mean " + ", ".join(
                            f"{v!r} for {k!r}" for k, v in hints.items()) + "?)"
                    return error_result(error_envelope(UsageError(
                        message, details={"tool": name, "unknown": extra,
                                          "didYouMean": hints})))
        return await call_next(ctx)
    return check


async def structure_sdk_errors(ctx: ServerRequestContext[object, object],
                               call_next: CallNext) -> HandlerResult:
    """Give the SDK's own text-only tool errors our structured error shape."""
    result = await call_next(ctx)
    if ctx.method != "tools/call":
        return result
    if isinstance(result, CallToolResult):
        result = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    if not isinstance(result, dict):
        return result
    sdk = SdkResult.read(result)
    if not sdk.is_error or sdk.structured_content is not None:
        return result
    text = sdk.text
    cls = UnknownToolError if "Unknown tool" in text else UsageError
    name = ToolCall.read(ctx.params or {}).name
    return error_result(error_envelope(cls(text or f"{name} failed",
                                            details={"tool": name})))


# -- the catalogue: each role's tools, in `tools/list` order, with their annotations --------

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True,
                            destructive_hint=False, open_world_hint=False)
# A send adds a turn or a mail; nothing is overwritten, but twice is twice.
SEND = ToolAnnotations(read_only_hint=False, idempotent_hint=False,
                       destructive_hint=False, open_world_hint=False)

Tool = Callable[..., Awaitable[CallToolResult]]
Catalogue = list[tuple[Tool, ToolAnnotations]]


def _role_tools(rt: Runtime) -> Catalogue:
    """The role's own tools and its bridge_handoff; the other role's module is never
    imported."""
    if rt.settings.role == "claude":
        # lazy: a server's start imports its own role's tools only
        from .codex_tools import CodexTools

        codex = CodexTools(rt)
        return [(codex.codex_threads_list, READ_ONLY), (codex.codex_thread_read, READ_ONLY),
                (codex.codex_message_send, SEND), (codex.codex_delivery_status, READ_ONLY),
                (HandoffToCodex(rt).bridge_handoff, SEND)]
    # lazy: a server's start imports its own role's tools only
    from .claude_tools import ClaudeTools, wire_alias

    claude = ClaudeTools(rt)
    return [(claude.claude_mailboxes_list, READ_ONLY), (claude.claude_mailbox_peek, READ_ONLY),
            (wire_alias(claude.claude_message_send, "sender", "from"), SEND),
            (HandoffToClaude(rt).bridge_handoff, SEND)]


def _extensions(rt: Runtime) -> list[Extension]:
    """Role claude's asks wait on Codex: offered as MCP tasks to a client that takes
    them (tasks.py)."""
    if rt.settings.role != "claude":
        return []
    from .tasks import AskTasks  # lazy: a server's start imports its own role's parts only

    return [AskTasks(rt)]


def catalogue(rt: Runtime) -> Catalogue:
    own = _role_tools(rt)
    bridge = BridgeTools(rt, ["bridge_status", "bridge_output_read",
                              *(fn.__name__ for fn, _ in own)])
    return [(bridge.bridge_status, READ_ONLY), (bridge.bridge_output_read, READ_ONLY), *own]


def build_server(settings: Settings, runtime: Runtime | None = None, *,
                 tasks: bool = True) -> MCPServer:
    """`tasks`: offer MCP tasks (stdio only: there the server lives as long as the
    session that asked, which is what hands an untaken reply on to the courier)."""
    rt = runtime or Runtime(settings)
    server: MCPServer = MCPServer(SERVER_NAME, version=__version__,
                                  instructions=instructions(settings.role),
                                  middleware=[structure_sdk_errors], log_level="WARNING",
                                  extensions=_extensions(rt) if tasks else [])
    server.middleware.append(_unknown_arguments(server))
    for fn, annotations in catalogue(rt):
        # the docstring, dedented, is the description
        server.add_tool(fn, description=inspect.cleandoc(fn.__doc__ or ""),
                        annotations=annotations)
    return server


def serve_streams(server: MCPServer, streams: tuple[IO[str], IO[str]]) -> None:
    """Serve `server` on `streams` (what the quick start hands over) until EOF."""
    lowlevel = server._lowlevel_server  # what `MCPServer.run_stdio_async` serves

    async def run() -> None:
        stdin, stdout = (anyio.wrap_file(s) for s in streams)
        async with stdio_server(stdin, stdout) as (read, write):
            await lowlevel.run(read, write, lowlevel.create_initialization_options())

    anyio.run(run)
