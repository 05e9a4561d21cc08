"""The `codex_*` tools (role claude): what Claude Code calls to talk into a live Codex
thread — list the loaded threads, read one, send a message as a new turn and return
Codex's reply (or, with wait=false, a receipt), and see where such a receipt is.

A thread is named by id or by its exact name, or left out when exactly one user thread
is loaded — never guessed. `codex_message_send` drives the engine `codexbridge talk`
drives: `messages/to_codex.blocking_say` (what `talk say` calls too; its reply inline, or
as an artifact when it is large), or with wait=false `to_codex.send`, whose courier
carries the turn (the receipt of `talk send`); `codex_delivery_status` reads the record.

Retry safety: everything before our submission turns into a turn is retryable (nothing
ran; a submission still waiting after CODEX_BRIDGE_QUEUE_WAIT is taken back out of the
queue). From the moment the turn starts (`SayProgress.turn_start_sent`) every failure says
`retryable: false` and `turnStarted: true` — the turn may be running even if we never saw
its answer.

The engine (the app-server client, websockets, the turn follower) is imported by the
tool bodies on their first call, so registering these tools costs only their schemas.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import TYPE_CHECKING, Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from ..codex.protocol.approvals import MCP_POLICIES, parse_policy
from ..codex.protocol.enums import TurnOutcome
from ..host.mailboxes import mailbox_name
from ..messages.frame import quoted
from .results import Data, Outcome, Warnings, guarded
from .runtime import Runtime, calling_thread
from .tasks import ASKING

if TYPE_CHECKING:
    from ..codex.protocol.enums import ApprovalPolicy
    from ..codex.protocol.threads import ThreadInfo
    from ..codex.turn import SayResult
    from ..messages.envelope import Sender
    from ..messages.records import Cost

PARTIAL_CHARS = 2000

ThreadParam = Annotated[str | None, Field(description=(
    "Thread id, or the thread's exact name (as codex_threads_list shows it). Leave it out "
    "when exactly one user thread is loaded; with several, the call fails with "
    "AMBIGUOUS_THREAD and lists them — never guess."))]


class CodexTools:
    """The tools of role claude, bound to one server's runtime (`server.py` wires them
    up). Each method is what the SDK calls: its signature is the tool's input schema,
    its docstring the description; the work is in the functions below."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    async def codex_threads_list(
        self,
        limit: Annotated[int, Field(ge=1, le=200, description=(
            "At most this many threads, most recently updated first."))] = 20,
    ) -> CallToolResult:
        """List the user threads loaded in the Codex app-server (the TUI's conversation
        among them): id, name, cwd, status and a preview."""
        return await guarded("codex_threads_list", list_threads(self.rt, limit))

    async def codex_thread_read(
        self,
        threadId: ThreadParam = None,
        limit: Annotated[int, Field(ge=1, le=500, description=(
            "The last this-many turns of the thread, oldest first."))] = 20,
    ) -> CallToolResult:
        """Read a Codex thread's recent turns as a transcript (› user, • Codex, $ commands).
        Long transcripts come back as an artifact to page with bridge_output_read."""
        return await guarded("codex_thread_read", read_thread(self.rt, threadId, limit))

    async def codex_message_send(
        self,
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
        newConversation: Annotated[bool, Field(description=(
            "Start a new conversation with its own hop budget — what to do after "
            "HOP_LIMIT when the exchange is still making progress."))] = False,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Send a message into a live Codex thread (the conversation open in the Codex
        TUI) as a new turn. wait=true returns Codex's reply; wait=false returns a receipt
        at once and the reply comes back as mail. Messages go through codex's own queue:
        concurrent sends run one turn at a time, in order. Replies over 64 KiB come back
        as an artifact (read with bridge_output_read). A send that started a turn is
        never safe to retry: check error.retryable. Each send has a deliveryId that
        codex_delivery_status (and `codexbridge talk status`) finds."""
        from ..messages.envelope import who_sends  # lazy: the cold MCP start

        sender = who_sends(os.environ, mcp_role=self.rt.settings.role,
                           calling_thread=calling_thread(ctx))
        body = (send(self.rt, text, threadId, timeoutMs, approvals, conversation,
                     sender=sender, new_conversation=newConversation) if wait
                else send_async(self.rt, text, threadId, approvals, replyTo, conversation,
                                timeoutMs, sender=sender, new_conversation=newConversation))
        return await guarded("codex_message_send", body)

    async def codex_delivery_status(
        self,
        deliveryId: Annotated[str | None, Field(description=(
            "The deliveryId a send returned. Leave it out for the recent deliveries."))] = None,
        waitSeconds: Annotated[float, Field(ge=0, le=600, description=(
            "Wait up to this long for a final state (delivered, failed, orphaned)."))] = 0,
    ) -> CallToolResult:
        """Where a message sent with wait=false is: queued, delivering, awaiting-reply,
        delivered (with the first 2,000 characters of Codex's reply), failed (why) or
        orphaned. A delivery whose courier died is recovered from the thread."""
        return await guarded("codex_delivery_status", delivery_status(deliveryId, waitSeconds))


# -- codex_threads_list, codex_thread_read ---------------------------------------------------

async def list_threads(rt: Runtime, limit: int) -> Outcome:
    # lazy: the cold MCP start to initialize (bench_mcp) imports no engine or websockets
    from ..codex.threads import list_threads as loaded

    async with rt.connect() as client:
        threads = await loaded(client)
    shown = threads[:limit]
    summary = f"{len(threads)} user thread(s) loaded" + "".join(
        f"\n- {t.id}  name={t.name or '-'}  cwd={t.cwd or '-'}  "
        f"status={t.status_label}" for t in shown)
    return Outcome({"url": rt.endpoint().url, "total": len(threads),
                    "threads": [t.as_dict() for t in shown],
                    "truncated": len(threads) > len(shown)}, summary)


async def read_thread(rt: Runtime, selector: str | None, limit: int) -> Outcome:
    # lazy: the cold MCP start to initialize (bench_mcp) imports no engine or websockets
    from ..codex.history import read_history, render_item
    from ..codex.threads import find_target

    async with rt.connect() as client:
        thread = await find_target(client, selector)
        turns = await read_history(client, thread.id)
    shown = turns[-limit:]
    texts = ["\n".join(line for item in t.items if (line := render_item(item))) for t in shown]
    heads: list[Data] = [{"id": t.id, "status": t.status, "startedAt": t.started_at}
                         for t in shown]
    rendered = [{**head, "text": text} for head, text in zip(heads, texts, strict=True)]
    data: Data = {"thread": thread.as_dict(), "totalTurns": len(turns),
                  "truncated": len(turns) > len(shown)}
    transcript = "\n\n".join(f"[turn {t.id} · {t.status}]\n{text}"
                             for t, text in zip(shown, texts, strict=True))
    size = len(json.dumps(rendered, ensure_ascii=False).encode("utf-8"))
    warnings: Warnings = []
    if size <= rt.settings.inline_max:
        data["turns"] = rendered
        data["artifact"] = None
        summary = (f"thread {thread.id} ({thread.name or 'unnamed'}): "
                   f"{len(shown)} of {len(turns)} turn(s)\n{transcript}")
    else:
        out, warnings = rt.deliver(transcript, kind="codex_thread",
                                   meta={"threadId": thread.id})
        data["turns"] = heads
        data["artifact"] = out.artifact
        data["transcript"] = out.text
        art_id = out.artifact["artifactId"] if out.artifact else None
        summary = (f"thread {thread.id}: {len(shown)} turn(s), transcript "
                   f"{out.bytes} bytes"
                   + (f" stored as artifact {art_id}; read it with bridge_output_read"
                      if art_id else ""))
    return Outcome(data, summary, warnings)


# -- codex_message_send, codex_delivery_status -----------------------------------------------

def check_args(rt: Runtime, text: str, approvals: str | None) -> ApprovalPolicy:
    rt.check_text(text)
    if not approvals:
        return rt.settings.approvals
    return parse_policy(approvals, source="approvals", allowed=MCP_POLICIES)


async def send(rt: Runtime, text: str, selector: str | None, timeout_ms: int | None,
               approvals: str | None, conversation: str | None = None, *,
               sender: Sender, new_conversation: bool = False) -> Outcome:
    """wait=true: `to_codex.blocking_say` — one turn on the thread, in line behind the
    others, its record ended when the call ends — and its reply."""
    # lazy: the cold MCP start to initialize (bench_mcp) imports no engine or websockets
    from ..messages.to_codex import blocking_say

    policy = check_args(rt, text, approvals)
    timeout = (timeout_ms / 1000.0) if timeout_ms else rt.settings.turn_timeout
    said = await blocking_say(
        text, connect=rt.connect, sender=sender, selector=selector,
        conversation=conversation, new_conversation=new_conversation,
        approvals=policy, approval_timeout=rt.settings.approval_timeout, timeout=timeout,
        busy_timeout=rt.settings.queue_wait, capture_limit=rt.settings.capture_max,
        task=ASKING.get())  # run as an MCP task (tasks.py): told the request it records
    return _replied(rt, said.thread, said.result, timeout, said.delivery_id, said.cost)


def _replied(rt: Runtime, thread: ThreadInfo, result: SayResult, timeout: float,
             delivery_id: str | None = None, cost: Cost | None = None) -> Outcome:
    """The reply of a finished turn (inline or as an artifact), or the error it came to."""
    # lazy: the cold MCP start to initialize (bench_mcp) imports no engine or websockets
    from ..codex.outcome import turn_error

    approvals = [a.as_dict() for a in result.approvals]
    where: Data = {"threadId": result.thread_id, "turnId": result.turn_id,
                   "thread": {"id": thread.id, "name": thread.name, "cwd": thread.cwd},
                   "deliveryId": delivery_id}
    error = turn_error(result, timeout=timeout, read_with="codex_thread_read")
    if error is not None:
        if result.status is not TurnOutcome.BUSY:  # it started: say what came of it
            partial = result.reply
            error.details = {**where, "status": result.status.value, "turnStarted": True,
                             "error": result.error, "approvals": approvals,
                             "partialReply": partial[:PARTIAL_CHARS],
                             "partialReplyBytes": len(partial.encode("utf-8"))}
            if result.status is TurnOutcome.TIMED_OUT:
                error.details["timeoutMs"] = int(timeout * 1000)
        raise error
    out, warnings = rt.deliver(result.reply, kind="codex_reply",
                               meta={"threadId": result.thread_id, "turnId": result.turn_id},
                               total_bytes=result.reply_bytes)
    # (the tokens before the reply: an interactive Claude is handed this JSON as a task's
    # result, and a reader of its end should find Codex's words there, not a count)
    data: Data = {**where, "status": "completed",
                  "tokens": cost.as_dict() if cost is not None else None,
                  "reply": out.text, "replyBytes": out.bytes, "artifact": out.artifact,
                  "truncated": out.truncated, "approvals": approvals}
    # (in our own line above Codex's words: no text of the reply can pass for it)
    spent = f"; {cost.line()}" if cost is not None else ""
    if out.artifact is not None:
        preview = out.preview or ""
        data["replyPreview"] = preview
        summary = (f"Codex replied with {out.bytes} bytes (turn {result.turn_id}{spent}); stored "
                   f"as artifact {out.artifact['artifactId']} — read it with "
                   f"bridge_output_read (artifactId, then each nextCursor). It begins:\n"
                   f"{quoted(preview[:500])}")
    else:  # Codex's words, quoted as any frame quotes them (`data.reply` keeps them exact)
        summary = (f"Codex replied (turn {result.turn_id} completed{spent}):\n"
                   f"{quoted(out.text or '')}")
    return Outcome(data, summary, warnings)


async def send_async(rt: Runtime, text: str, selector: str | None, approvals: str | None,
                     reply_to: str | None, conversation: str | None,
                     timeout_ms: int | None, *, sender: Sender | None = None,
                     new_conversation: bool = False) -> Outcome:
    """wait=false: the receipt of `talk send` (the courier carries the turn)."""
    # lazy: the cold MCP start to initialize (bench_mcp) imports no engine or websockets
    from ..codex.endpoint import reach_of
    from ..messages.to_codex import send as send_message

    policy = check_args(rt, text, approvals)
    receipt = await send_message(
        text, selector=selector, connect=rt.connect, reach=reach_of(rt.endpoint()),
        reply_to=mailbox_name(reply_to) if reply_to else None, conversation=conversation,
        policy=policy, approval_timeout=rt.settings.approval_timeout,
        turn_timeout=(timeout_ms / 1000.0) if timeout_ms else 4 * 3600.0, sender=sender,
        new_conversation=new_conversation)
    d = receipt.delivery
    data = {**receipt.as_dict(), "deliveryId": d.id,
            "threadId": d.thread_id, "replyTo": d.reply_to}
    summary = (f"queued as {d.id} in thread {d.thread_id} ({d.state}); Codex's reply will "
               + (f"arrive as mail in mailbox {d.reply_to}" if d.reply_to else
                  "be readable with codex_delivery_status")
               + f" — conversation {d.conversation}, hop {d.hop}/{d.max_hops}")
    return Outcome(data, summary, [{"code": "NO_REPLY_MAILBOX", "message": w}
                                   for w in d.warnings])


async def delivery_status(delivery_id: str | None, wait: float) -> Outcome:
    # lazy: the cold MCP start to initialize (bench_mcp) imports no engine or websockets
    from ..messages.conversations import cost_of
    from ..messages.records import DeliveryStore
    from ..messages.to_codex import status as check

    store = DeliveryStore()
    if delivery_id is None:
        recent = store.recent(20)
        return Outcome({"deliveries": [r.as_dict() for r in recent]},
                       f"{len(recent)} recent deliveries" + "".join(
                           f"\n- {r.id} {r.state} {r.direction}" for r in recent))
    record = await asyncio.to_thread(check, store, delivery_id)
    end = time.monotonic() + wait
    while not record.state.final and time.monotonic() < end:
        await asyncio.sleep(min(0.2, max(0.0, end - time.monotonic())))
        record = await asyncio.to_thread(check, store, delivery_id)
    cost = cost_of(record)
    data: Data = {"delivery": record.as_dict(), "state": record.state.value,
                  "final": record.state.final, "replyPreview": record.reply_preview,
                  "tokens": cost.as_dict() if cost is not None else None}
    summary = f"delivery {record.id}: {record.state}" + (
        f" ({cost.line()})" if cost is not None else "") + (
        f"\n{quoted(record.reply_preview)}" if record.reply_preview else "") + (
        f"\nreason: {record.reason}" if record.reason else "")
    return Outcome(data, summary)
