"""Role claude: the tools Claude Code calls to talk into a live Codex thread.

They drive the same core as `codexbridge talk`: list the loaded threads, read one,
send a message as a new turn and return Codex's reply. A thread is named by id or by
its exact name, or left out when exactly one user thread is loaded — never guessed.

The talk core (the app-server client, websockets, the turn follower) is imported by the
tool bodies on their first call, so registering these tools costs only their schemas.
"""

import json
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from .runtime import Runtime
from .tooling import READ_ONLY, SEND, Outcome, add_tool, guarded

TOOLS = ("codex_threads_list", "codex_thread_read", "codex_message_send",
         "codex_delivery_status")

ThreadParam = Annotated[str | None, Field(description=(
    "Thread id, or the thread's exact name (as codex_threads_list shows it). Leave it out "
    "when exactly one user thread is loaded; with several, the call fails with "
    "AMBIGUOUS_THREAD and lists them — never guess."))]


def _thread_view(info: Any) -> dict[str, Any]:
    return dict(info.as_dict())


def register(server: MCPServer, rt: Runtime) -> None:
    """Add the claude-role tools to `server`."""

    async def codex_threads_list(
        limit: Annotated[int, Field(ge=1, le=200, description=(
            "At most this many threads, most recently updated first."))] = 20,
    ) -> CallToolResult:
        """List the user threads loaded in the Codex app-server (the TUI's conversation
        among them): id, name, cwd, status and a preview."""
        async def body() -> Outcome:
            from ..talk.threads import list_threads

            async with rt.connect() as client:
                threads = await list_threads(client)
            rows = [_thread_view(t) for t in threads]
            shown = rows[:limit]
            summary = f"{len(rows)} user thread(s) loaded" + "".join(
                f"\n- {t['id']}  name={t['name'] or '-'}  cwd={t['cwd'] or '-'}  "
                f"status={t['status']}" for t in shown)
            return Outcome({"url": rt.endpoint().url, "total": len(rows), "threads": shown,
                            "truncated": len(rows) > len(shown)}, summary)
        return await guarded("codex_threads_list", body)

    async def codex_thread_read(
        threadId: ThreadParam = None,
        limit: Annotated[int, Field(ge=1, le=500, description=(
            "The last this-many turns of the thread, oldest first."))] = 20,
    ) -> CallToolResult:
        """Read a Codex thread's recent turns as a transcript (› user, • Codex, $ commands).
        Long transcripts come back as an artifact to page with bridge_output_read."""
        async def body() -> Outcome:
            from ..talk.history import read_history, render_item
            from ..talk.threads import find_target

            async with rt.connect() as client:
                thread = await find_target(client, threadId)
                turns = await read_history(client, thread.id)
            shown = turns[-limit:]
            rendered = []
            for turn in shown:
                lines = [line for item in turn.items if (line := render_item(item))]
                rendered.append({"id": turn.id, "status": turn.status,
                                 "startedAt": turn.started_at, "text": "\n".join(lines)})
            data: dict[str, Any] = {"thread": _thread_view(thread), "totalTurns": len(turns),
                                    "truncated": len(turns) > len(shown)}
            transcript = "\n\n".join(f"[turn {t['id']} · {t['status']}]\n{t['text']}"
                                     for t in rendered)
            size = len(json.dumps(rendered, ensure_ascii=False).encode("utf-8"))
            warnings: list[dict[str, str]] = []
            if size <= rt.settings.inline_max:
                data["turns"] = rendered
                data["artifact"] = None
                summary = (f"thread {thread.id} ({thread.name or 'unnamed'}): "
                           f"{len(shown)} of {len(turns)} turn(s)\n{transcript}")
            else:
                out, warnings = rt.deliver(transcript, kind="codex_thread",
                                           meta={"threadId": thread.id})
                data["turns"] = [{k: v for k, v in t.items() if k != "text"} for t in rendered]
                data["artifact"] = out["artifact"]
                data["transcript"] = out["text"]
                art_id = (out["artifact"] or {}).get("artifactId")
                summary = (f"thread {thread.id}: {len(shown)} turn(s), transcript "
                           f"{out['bytes']} bytes"
                           + (f" stored as artifact {art_id}; read it with bridge_output_read"
                              if art_id else ""))
            return Outcome(data, summary, warnings)
        return await guarded("codex_thread_read", body)

    async def codex_message_send(
        text: Annotated[str, Field(description=(
            "What to say to Codex. It appears in the Codex TUI as a new user turn; the "
            "tool waits for the turn to end and returns Codex's reply."))],
        threadId: ThreadParam = None,
        timeoutMs: Annotated[int | None, Field(ge=1000, le=3_600_000, description=(
            "How long to follow the turn, in ms (default $CODEX_BRIDGE_TURN_TIMEOUT, "
            "300 s). On timeout the turn may still be running: never resend."))] = None,
        approvals: Annotated[str | None, Field(
            json_schema_extra={"enum": ["tui", "decline"]},
            description=("Who answers Codex's approval requests during this turn: 'tui' "
                         "(the human, in the Codex TUI; default) or 'decline' (refuse "
                         "at once). 'accept' is refused over MCP."))] = None,
        wait: Annotated[bool, Field(description=(
            "true (default): wait for the turn and return Codex's reply. false: return a "
            "receipt at once (deliveryId); Codex's reply arrives later as mail in this "
            "session's mailbox, and codex_delivery_status shows where it is. Use false "
            "for anything that may take minutes."))] = True,
        replyTo: Annotated[str | None, Field(description=(
            "With wait=false: the mailbox Codex's reply goes to. Default: this Claude "
            "session's own mailbox."))] = None,
        conversation: Annotated[str | None, Field(description=(
            "The conversation this continues (its hop budget). Default: the one this "
            "session is handling, else a new one."))] = None,
    ) -> CallToolResult:
        """Send a message into a live Codex thread (the conversation open in the Codex
        TUI) as a new turn. wait=true returns Codex's reply; wait=false returns a receipt
        at once and the reply comes back as mail. Messages go through codex's own queue:
        concurrent sends run one turn at a time, in order. Replies over 64 KiB come back
        as an artifact (read with bridge_output_read). A send that started a turn is
        never safe to retry: check error.retryable."""
        async def body() -> Outcome:
            if not wait:
                from .send import send_async

                return await send_async(rt, text, threadId, approvals, replyTo, conversation,
                                        timeoutMs)
            from .send import send

            return await send(rt, text, threadId, timeoutMs, approvals, conversation)
        return await guarded("codex_message_send", body)

    async def codex_delivery_status(
        deliveryId: Annotated[str | None, Field(description=(
            "The deliveryId a send returned. Leave it out for the recent deliveries."))] = None,
        waitSeconds: Annotated[float, Field(ge=0, le=600, description=(
            "Wait up to this long for a final state (delivered, failed, orphaned)."))] = 0,
    ) -> CallToolResult:
        """Where a message sent with wait=false is: queued, delivering, awaiting-reply,
        delivered (with the first 2,000 characters of Codex's reply), failed (why) or
        orphaned. A delivery whose courier died is recovered from the thread."""
        async def body() -> Outcome:
            from .send import delivery_status

            return await delivery_status(deliveryId, waitSeconds)
        return await guarded("codex_delivery_status", body)

    add_tool(server, codex_threads_list, READ_ONLY)
    add_tool(server, codex_thread_read, READ_ONLY)
    add_tool(server, codex_message_send, SEND)
    add_tool(server, codex_delivery_status, READ_ONLY)
