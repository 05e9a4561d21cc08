"""`codex_message_send`: one turn on a live thread, in line behind the others.

    resolve the thread (id or exact name; never a guess)
    → wait for our place in the thread's line (CODEX_BRIDGE_QUEUE_WAIT)
    → wait until the thread is idle (the human may be mid-turn in the TUI)
    → talk.say(): thread/resume, turn/start, follow the turn to the end
    → reply inline, or as an artifact when it is large

Retry safety: everything before the `turn/start` request is retryable (nothing ran).
From the moment `turn/start` is sent, every failure says `retryable: false` and
`turnStarted: true` — the turn may be running even if we never saw its answer.

The line: a finished turn (completed / failed / interrupted) releases the thread at
once. A turn we stopped following (timeout, caller cancelled, connection lost after
turn/start) keeps the thread until the app-server reports it idle, watched by a
background task on its own connection; only then may the next send start.
"""

import asyncio
import time
from typing import Any

from .. import talk
from ..client import AppServerClient
from ..errors import BridgeError, RpcError
from ..protocol.approvals import Policy
from ..protocol.threads import ThreadInfo
from .results import ToolFailure, from_bridge_error
from .runtime import Runtime
from .settings import MCP_APPROVALS
from .tooling import Outcome, log
from .turn_queue import QueueTimeout, Ticket

PARTIAL_CHARS = 2000


class _Watch:
    """The client as say() sees it, noting whether a turn may have started."""

    def __init__(self, client: AppServerClient) -> None:
        self._client = client
        self.turn_start_sent = False

    async def request(self, method: str, params: dict[str, Any] | None = None, *,
                      timeout: float | None = None) -> Any:
        if method != "turn/start":
            return await self._client.request(method, params, timeout=timeout)
        self.turn_start_sent = True
        try:
            return await self._client.request(method, params, timeout=timeout)
        except RpcError:
            # An error *answer* is a refusal: no turn exists. Only silence (timeout,
            # lost connection) leaves the turn's fate unknown.
            self.turn_start_sent = False
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def _busy(status: str) -> bool:
    return status.startswith("active")


async def thread_status(client: AppServerClient, thread_id: str) -> str:
    result = await client.request("thread/read", {"threadId": thread_id})
    return ThreadInfo.from_thread(result.get("thread") or {}).status


async def wait_idle(rt: Runtime, client: AppServerClient, thread_id: str,
                    deadline: float) -> None:
    """Return once the thread is not running a turn; QueueTimeout at `deadline`."""
    while True:
        status = await thread_status(client, thread_id)
        if not _busy(status):
            return
        if time.monotonic() >= deadline:
            raise QueueTimeout(thread_id, rt.settings.queue_wait, 0)
        await asyncio.sleep(rt.poll_interval)


async def hold_until_idle(rt: Runtime, ticket: Ticket, thread_id: str) -> None:
    """Keep the thread's place until the turn we stopped following has ended."""
    try:
        async with rt.connect() as client:
            while _busy(await thread_status(client, thread_id)):
                await asyncio.sleep(rt.poll_interval)
    except Exception as exc:  # app-server gone: so is the turn
        log.warning("releasing thread %s: cannot watch it (%s)", thread_id, exc)
    finally:
        rt.queue.release(ticket)


def check_args(rt: Runtime, text: str, approvals: str | None) -> Policy:
    rt.check_text(text)
    policy = approvals or rt.settings.approvals
    if policy not in MCP_APPROVALS:
        why = (" — accept is refused over MCP: only the human (tui) or a refusal "
               "(decline) may answer Codex's approvals" if policy == "accept" else "")
        raise ToolFailure("INVALID_ARGUMENT", f"approvals={policy!r}: expected tui or "
                                              f"decline{why}", {"parameter": "approvals"})
    return policy  # type: ignore[return-value]


async def send(rt: Runtime, text: str, selector: str | None, timeout_ms: int | None,
               approvals: str | None) -> Outcome:
    policy = check_args(rt, text, approvals)
    timeout = (timeout_ms / 1000.0) if timeout_ms else rt.settings.turn_timeout
    async with rt.connect() as client:
        thread = await talk.find_target(client, selector)
        started_wait = time.monotonic()
        deadline = started_wait + rt.settings.queue_wait
        try:
            ticket = await rt.queue.acquire(thread.id, rt.settings.queue_wait,
                                            label=f"send@{time.strftime('%H:%M:%S')}")
        except QueueTimeout as exc:
            raise _queue_timeout(thread, exc, busy=False) from None
        hand_off = False
        try:
            try:
                await wait_idle(rt, client, thread.id, deadline)
            except QueueTimeout as exc:
                raise _queue_timeout(thread, exc, busy=True) from None
            watch = _Watch(client)
            try:
                result = await talk.say(watch, thread.id, text,  # type: ignore[arg-type]
                                        approvals=policy,
                                        approval_timeout=rt.settings.approval_timeout,
                                        timeout=timeout,
                                        capture_limit=rt.settings.capture_max)
            except asyncio.CancelledError:
                hand_off = watch.turn_start_sent
                raise
            except BridgeError as exc:
                hand_off = watch.turn_start_sent
                raise from_bridge_error(exc, turn_started=watch.turn_start_sent,
                                        rpc_code="TURN_START_FAILED") from exc
            hand_off = result.status == "timedOut"
        finally:
            if hand_off:
                rt.spawn(hold_until_idle(rt, ticket, thread.id), f"hold-{thread.id}")
            else:
                rt.queue.release(ticket)
    return _outcome(rt, thread, result, timeout)


def _queue_timeout(thread: ThreadInfo, exc: QueueTimeout, *, busy: bool) -> ToolFailure:
    why = ("the thread stayed busy (a turn is running in the TUI)" if busy
           else f"{exc.ahead} earlier send(s) still ahead in line")
    return ToolFailure("THREAD_QUEUE_TIMEOUT", (
        f"waited {exc.waited:g} s for thread {thread.id} and gave up: {why}; nothing was "
        "sent (CODEX_BRIDGE_QUEUE_WAIT)"),
        {"threadId": thread.id, "ahead": exc.ahead, "busy": busy, "turnStarted": False})


def _outcome(rt: Runtime, thread: ThreadInfo, result: talk.SayResult,
             timeout: float) -> Outcome:
    approvals = [a.as_dict() for a in result.approvals]
    where = {"threadId": result.thread_id, "turnId": result.turn_id,
             "thread": {"id": thread.id, "name": thread.name, "cwd": thread.cwd}}
    if result.status != "completed":
        partial = result.reply
        details = {**where, "status": result.status, "turnStarted": True,
                   "error": result.error, "approvals": approvals,
                   "partialReply": partial[:PARTIAL_CHARS],
                   "partialReplyBytes": len(partial.encode("utf-8"))}
        if result.status == "timedOut":
            details["timeoutMs"] = int(timeout * 1000)
            raise ToolFailure("TURN_TIMEOUT", (
                f"turn {result.turn_id} did not finish within {timeout:g} s; it may still be "
                "running in the Codex TUI — do not resend; read the thread later with "
                "codex_thread_read"), details)
        code = "TURN_INTERRUPTED" if result.status == "interrupted" else "TURN_FAILED"
        message = (result.error or {}).get("message") if isinstance(result.error, dict) else None
        raise ToolFailure(code, f"turn {result.turn_id} ended {result.status}"
                          + (f": {message}" if message else ""), details)
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
