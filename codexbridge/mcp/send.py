"""`codex_message_send`: one turn on a live thread, in line behind the others.

    resolve the thread (id or exact name; never a guess)
    → talk.turn.say(): thread/resume, thread/queue/add (codex's own queue orders our turn
      behind the human's and other senders', across processes), follow the turn
    → reply inline, or as an artifact when it is large

With wait=false the courier of `talk send` carries the turn instead and the call returns
the receipt (`send_async`); `codex_delivery_status` reads the record.

Retry safety: everything before our submission turns into a turn is retryable (nothing
ran; a submission still waiting after CODEX_BRIDGE_QUEUE_WAIT is taken back out of the
queue). From the moment the turn starts (`SayProgress.turn_start_sent`) every failure says
`retryable: false` and `turnStarted: true` — the turn may be running even if we never saw
its answer.
"""

import asyncio
import time
from typing import Any

from ..errors import (
    BridgeError,
    RpcError,
    TurnStartFailedError,
)
from ..protocol.approvals import MCP_POLICIES, parse_policy
from ..protocol.enums import ApprovalPolicy, TurnOutcome
from ..protocol.threads import ThreadInfo
from ..talk.outcome import turn_error
from ..talk.threads import find_target
from ..talk.turn import SayProgress, SayResult, say
from .results import turn_started
from .runtime import Runtime
from .tooling import Outcome

PARTIAL_CHARS = 2000


def check_args(rt: Runtime, text: str, approvals: str | None) -> ApprovalPolicy:
    rt.check_text(text)
    if not approvals:
        return rt.settings.approvals
    return parse_policy(approvals, source="approvals", allowed=MCP_POLICIES)


async def send(rt: Runtime, text: str, selector: str | None, timeout_ms: int | None,
               approvals: str | None, conversation: str | None = None) -> Outcome:
    policy = check_args(rt, text, approvals)
    timeout = (timeout_ms / 1000.0) if timeout_ms else rt.settings.turn_timeout
    from ..talk.deliveries import blocking_request

    async with rt.connect() as client:
        thread = await find_target(client, selector)
        words = blocking_request(text, thread.id, conversation=conversation)
        progress = SayProgress()
        try:
            result = await say(client, thread.id, words, approvals=policy,
                               approval_timeout=rt.settings.approval_timeout,
                               timeout=timeout, busy_timeout=rt.settings.queue_wait,
                               capture_limit=rt.settings.capture_max, progress=progress)
        except RpcError as exc:
            if progress.turn_start_sent:
                raise turn_started(exc) from exc
            if type(exc) is RpcError:  # a plain refusal: nothing ran
                raise TurnStartFailedError(exc.rpc_code, exc.message, exc.data) from exc
            raise
        except BridgeError as exc:
            raise (turn_started(exc) if progress.turn_start_sent else exc) from exc
    return _outcome(rt, thread, result, timeout)


async def send_async(rt: Runtime, text: str, selector: str | None, approvals: str | None,
                     reply_to: str | None, conversation: str | None,
                     timeout_ms: int | None) -> Outcome:
    """wait=false: the receipt of `talk send` (the courier carries the turn)."""
    from ..inbox.service import mailbox_name
    from ..talk.deliveries import send as send_message

    policy = check_args(rt, text, approvals)
    receipt = await send_message(
        text, selector=selector, connect=rt.connect,
        reply_to=mailbox_name(reply_to) if reply_to else None, conversation=conversation,
        policy=policy, approval_timeout=rt.settings.approval_timeout,
        turn_timeout=(timeout_ms / 1000.0) if timeout_ms else 4 * 3600.0)
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
    from ..conversation.records import DeliveryStore
    from ..talk.deliveries import status as check

    store = DeliveryStore()
    if delivery_id is None:
        rows = [r.as_dict() for r in store.recent(20)]
        return Outcome({"deliveries": rows}, f"{len(rows)} recent deliveries" + "".join(
            f"\n- {r['id']} {r['state']} {r['direction']}" for r in rows))
    record = await asyncio.to_thread(check, store, delivery_id)
    end = time.monotonic() + wait
    while not record.state.final and time.monotonic() < end:
        await asyncio.sleep(min(0.2, max(0.0, end - time.monotonic())))
        record = await asyncio.to_thread(check, store, delivery_id)
    data = {"delivery": record.as_dict(), "state": record.state.value,
            "final": record.state.final, "replyPreview": record.reply_preview}
    summary = f"delivery {record.id}: {record.state}" + (
        f"\n{record.reply_preview}" if record.reply_preview else "") + (
        f"\nreason: {record.reason}" if record.reason else "")
    return Outcome(data, summary)


def _outcome(rt: Runtime, thread: ThreadInfo, result: SayResult, timeout: float) -> Outcome:
    approvals = [a.as_dict() for a in result.approvals]
    where = {"threadId": result.thread_id, "turnId": result.turn_id,
             "thread": {"id": thread.id, "name": thread.name, "cwd": thread.cwd}}
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
