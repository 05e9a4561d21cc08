"""`codex_message_send`: one turn on a live thread, in line behind the others.

    resolve the thread (id or exact name; never a guess)
    → wait for our place in the thread's line (CODEX_BRIDGE_QUEUE_WAIT)
    → talk.turn.say(): thread/resume, wait until idle (the human may be mid-turn in
      the TUI; at most what is left of the queue wait), turn/start, follow the turn
    → reply inline, or as an artifact when it is large

Retry safety: everything before the `turn/start` request is retryable (nothing ran).
From the moment `turn/start` is sent (`SayProgress.turn_start_sent`), every failure
says `retryable: false` and `turnStarted: true` — the turn may be running even if we
never saw its answer.

The line: a finished turn (completed / failed / interrupted) releases the thread at
once. A turn we stopped following (timeout, caller cancelled, connection lost after
turn/start) keeps the thread until the app-server reports it idle, watched by a
background task on its own connection; only then may the next send start.
"""

import asyncio
import time
from typing import Any

from ..errors import (
    BridgeError,
    QueueTimeoutError,
    RpcError,
    TurnFailedError,
    TurnInterruptedError,
    TurnStartFailedError,
    TurnTimeoutError,
)
from ..protocol.approvals import MCP_POLICIES, parse_policy
from ..protocol.enums import ApprovalPolicy, TurnOutcome
from ..protocol.threads import ThreadInfo
from ..talk.threads import find_target, wait_idle
from ..talk.turn import SayProgress, SayResult, say
from .results import turn_started
from .runtime import Runtime
from .tooling import Outcome, log
from .turn_queue import QueueTimeout, Ticket

PARTIAL_CHARS = 2000


async def hold_until_idle(rt: Runtime, ticket: Ticket, thread_id: str) -> None:
    """Keep the thread's place until the turn we stopped following has ended."""
    try:
        async with rt.connect() as client:
            await wait_idle(client, thread_id, None)
    except Exception as exc:  # app-server gone: so is the turn
        log.warning("releasing thread %s: cannot watch it (%s)", thread_id, exc)
    finally:
        rt.queue.release(ticket)


def check_args(rt: Runtime, text: str, approvals: str | None) -> ApprovalPolicy:
    rt.check_text(text)
    if not approvals:
        return rt.settings.approvals
    return parse_policy(approvals, source="approvals", allowed=MCP_POLICIES)


async def send(rt: Runtime, text: str, selector: str | None, timeout_ms: int | None,
               approvals: str | None) -> Outcome:
    policy = check_args(rt, text, approvals)
    timeout = (timeout_ms / 1000.0) if timeout_ms else rt.settings.turn_timeout
    async with rt.connect() as client:
        thread = await find_target(client, selector)
        deadline = time.monotonic() + rt.settings.queue_wait
        try:
            ticket = await rt.queue.acquire(thread.id, rt.settings.queue_wait,
                                            label=f"send@{time.strftime('%H:%M:%S')}")
        except QueueTimeout as exc:
            raise _queue_timeout(thread, exc.waited, exc.ahead, busy=False) from None
        hand_off = False
        progress = SayProgress()
        try:
            try:
                result = await say(client, thread.id, text, approvals=policy,
                                   approval_timeout=rt.settings.approval_timeout,
                                   timeout=timeout,
                                   busy_timeout=max(0.0, deadline - time.monotonic()),
                                   capture_limit=rt.settings.capture_max, progress=progress)
            except asyncio.CancelledError:
                hand_off = progress.turn_start_sent
                raise
            except RpcError as exc:
                hand_off = progress.turn_start_sent
                if hand_off:
                    raise turn_started(exc) from exc
                if type(exc) is RpcError:  # a plain refusal: nothing ran
                    raise TurnStartFailedError(exc.rpc_code, exc.message, exc.data) from exc
                raise
            except BridgeError as exc:
                hand_off = progress.turn_start_sent
                raise (turn_started(exc) if hand_off else exc) from exc
            hand_off = result.status is TurnOutcome.TIMED_OUT
        finally:
            if hand_off:
                rt.spawn(hold_until_idle(rt, ticket, thread.id), f"hold-{thread.id}")
            else:
                rt.queue.release(ticket)
    if result.status is TurnOutcome.BUSY:
        raise _queue_timeout(thread, rt.settings.queue_wait, 0, busy=True)
    return _outcome(rt, thread, result, timeout)


def _queue_timeout(thread: ThreadInfo, waited: float, ahead: int, *,
                   busy: bool) -> QueueTimeoutError:
    why = ("the thread stayed busy (a turn is running in the TUI)" if busy
           else f"{ahead} earlier send(s) still ahead in line")
    return QueueTimeoutError(
        f"waited {waited:g} s for thread {thread.id} and gave up: {why}; nothing was "
        "sent (CODEX_BRIDGE_QUEUE_WAIT)",
        details={"threadId": thread.id, "ahead": ahead, "busy": busy, "turnStarted": False})


def _outcome(rt: Runtime, thread: ThreadInfo, result: SayResult, timeout: float) -> Outcome:
    approvals = [a.as_dict() for a in result.approvals]
    where = {"threadId": result.thread_id, "turnId": result.turn_id,
             "thread": {"id": thread.id, "name": thread.name, "cwd": thread.cwd}}
    if result.status is not TurnOutcome.COMPLETED:
        partial = result.reply
        details = {**where, "status": result.status.value, "turnStarted": True,
                   "error": result.error, "approvals": approvals,
                   "partialReply": partial[:PARTIAL_CHARS],
                   "partialReplyBytes": len(partial.encode("utf-8"))}
        kw: dict[str, Any] = {"thread_id": result.thread_id, "turn_id": result.turn_id,
                              "partial_reply": partial}
        error: BridgeError
        if result.status is TurnOutcome.TIMED_OUT:
            details["timeoutMs"] = int(timeout * 1000)
            error = TurnTimeoutError(
                f"turn {result.turn_id} did not finish within {timeout:g} s; it may still be "
                "running in the Codex TUI — do not resend; read the thread later with "
                "codex_thread_read", **kw)
        else:
            cls = (TurnInterruptedError if result.status is TurnOutcome.INTERRUPTED
                   else TurnFailedError)
            message = ((result.error or {}).get("message")
                       if isinstance(result.error, dict) else None)
            error = cls(f"turn {result.turn_id} ended {result.status}"
                        + (f": {message}" if message else ""), **kw)
        error.details = details
        raise error
    out, warnings = rt.deliver(result.reply, kind="codex_reply",
                               meta={"threadId": result.thread_id, "turnId": result.turn_id},
                               total_bytes=result.reply_bytes)
    data: dict[str, Any] = {**where, "status": "completed", "reply": out["text"],
                            "replyBytes": out["bytes"], "artifact": out["artifact"],
                            "truncated": out["truncated"], "approvals": approvals}
    if out["artifact"] is not None:
        art = out["artifact"]
        data["replyPreview"] = out["preview"]
        summary = (f"Codex replied with {out['bytes']} bytes (turn {result.turn_id}); stored "
                   f"as artifact {art['artifactId']} — read it with bridge_output_read "
                   f"(artifactId, then each nextCursor). It begins:\n{out['preview'][:500]}")
    else:
        summary = f"Codex replied (turn {result.turn_id} completed):\n{out['text']}"
    return Outcome(data, summary, warnings)
