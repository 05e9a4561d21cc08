"""`bridge_handoff`, on both roles: the departing agent hands the work to the other one
and writes the note itself (what was decided, what was rejected and why, what is next).

Role claude (inside Claude Code) hands to the live Codex thread; role codex (inside
Codex) hands to a Claude Code session — the same service as `codexbridge handoff`
(`codexbridge/handoff/`, docs/handoff.md). The calling thread of a codex-role call is
taken from the call's `_meta` (codex gives its MCP servers no CODEX_THREAD_ID).

Imported at start-up: the handoff service is imported by the tool body on first call.
"""

import os
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from .results import warning
from .runtime import Runtime
from .tooling import SEND, Outcome, add_tool, guarded

TOOLS = ("bridge_handoff",)

NoteParam = Annotated[str | None, Field(description=(
    "Your note for the agent taking over, in your own words: `Decisions:` (what was "
    "decided — and `Rejected:` what was rejected, and why) and `Next:` (the current "
    "objective and what is still open), on their own lines or inline. Plain text is read "
    "as the next step."))]
DecisionsParam = Annotated[str | None, Field(description=(
    "Decisions, and what was rejected and why (added to the note's Decisions)."))]
NextParam = Annotated[str | None, Field(description=(
    "The next step and what is still open (added to the note's Next)."))]
ProjectParam = Annotated[str | None, Field(description=(
    "The project directory (its handoff ledger and git). Default: this server's working "
    "directory."))]
DryRunParam = Annotated[bool, Field(description=(
    "Build the delta and return it without delivering anything (no watermark moves)."))]


def _summary(data: dict[str, Any]) -> str:
    if data.get("dryRun"):
        return f"dry run: delta of {data.get('chars')} characters (nothing delivered)"
    if data.get("nothingNew"):
        return f"nothing new to hand to {data.get('target')}: it has heard everything"
    return (f"handoff {data.get('handoffId')} to {data.get('target')} via {data.get('via')}: "
            f"{data.get('stateText')}; {data.get('messages')} message(s), "
            f"{data.get('chars')} characters; every message in full: {data.get('full')}")


def _outcome(result: Any, include_delta: bool) -> Outcome:
    data = result.as_dict()
    data.pop("ok", None)
    data["stateText"] = result.state_text()
    if include_delta and result.prepared is not None:
        data["delta"] = result.prepared.built.delta
        data["deltaFile"] = result.prepared.delta_path
    warnings = [warning("HANDOFF", w) for w in data.get("warnings") or []]
    return Outcome(data, _summary(data), warnings)


def register(server: MCPServer, rt: Runtime) -> None:
    """Add `bridge_handoff` for this server's role."""
    if rt.settings.role == "claude":
        _register_claude(server, rt)
    else:
        _register_codex(server, rt)


def _register_claude(server: MCPServer, rt: Runtime) -> None:
    async def bridge_handoff(
        note: NoteParam = None,
        decisions: DecisionsParam = None,
        nextStep: NextParam = None,
        threadId: Annotated[str | None, Field(description=(
            "The Codex thread to hand to (id or exact name). Leave it out when exactly one "
            "user thread is loaded."))] = None,
        fromSession: Annotated[str | None, Field(description=(
            "Your Claude Code session id. Default: the session running this server, else "
            "the only one hooked in the project."))] = None,
        project: ProjectParam = None,
        dryRun: DryRunParam = False,
    ) -> CallToolResult:
        """Hand the work to the live Codex thread the human watches: what was said in
        this session since Codex last heard (never tool output), your note (decisions,
        next step) and what git shows go into the thread's history, and a short turn
        shows the human that context arrived. Returns once Codex started that turn."""
        async def body() -> Outcome:
            from ..handoff.note import parse_note
            from ..handoff.to_codex import handoff_to_codex

            async with rt.connect() as client:
                result = await handoff_to_codex(
                    client, project=project or os.getcwd(),
                    note=parse_note(note, decisions, nextStep), thread=threadId,
                    from_session=fromSession, inbox=rt.inbox(),
                    approvals=rt.settings.approvals,
                    approval_timeout=rt.settings.approval_timeout,
                    busy_timeout=rt.settings.queue_wait, dry_run=dryRun)
            return _outcome(result, dryRun)
        return await guarded("bridge_handoff", body)

    add_tool(server, bridge_handoff, SEND)


def _register_codex(server: MCPServer, rt: Runtime) -> None:
    async def bridge_handoff(
        note: NoteParam = None,
        decisions: DecisionsParam = None,
        nextStep: NextParam = None,
        mailbox: Annotated[str | None, Field(description=(
            "The mailbox of the Claude Code session to hand to. Default: the only session "
            "hooked in the project."))] = None,
        threadId: Annotated[str | None, Field(description=(
            "Your Codex thread (the source). Default: the thread making this call."))] = None,
        via: Annotated[str, Field(json_schema_extra={"enum": ["auto", "mail", "resume"]},
                                  description=(
            "mail: the session's Stop hook / watcher brings it in; resume: its "
            "SessionStart hook (the codexbridge plugin's) when it is resumed; auto "
            "(default): mail if it runs, else resume."))] = "auto",
        project: ProjectParam = None,
        dryRun: DryRunParam = False,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Hand the work to a Claude Code session: what was said in this thread since
        that session last heard (never tool output), your note (decisions, next step)
        and what git shows arrive there as one message — live or at its next stop if
        it runs, else when it is resumed. The result's `state` says which (delivered,
        queued, parked, waiting-for-resume) and `action` what the human should run."""
        async def body() -> Outcome:
            from ..handoff.note import parse_note
            from ..handoff.to_claude import handoff_to_claude
            from .tools_codex import calling_thread

            async with rt.connect() as client:
                result = await handoff_to_claude(
                    client, project=project or os.getcwd(),
                    note=parse_note(note, decisions, nextStep), mailbox=mailbox,
                    thread=threadId or calling_thread(ctx), via=via, inbox=rt.inbox(),
                    dry_run=dryRun)
            return _outcome(result, dryRun)
        return await guarded("bridge_handoff", body)

    add_tool(server, bridge_handoff, SEND)
