"""One bridge turn on a live thread: start it, follow it, answer its server requests.

What belongs to the turn and what to answer an approval are the pure core's decisions
(`protocol/turn.py`, `protocol/approvals.py`); this module feeds them the connection's
events and acts on what they return.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, NamedTuple

from ..errors import ConnectionLostError, RpcError
from ..protocol import approvals as approval_table
from ..protocol.approvals import DEFAULT_APPROVAL_TIMEOUT
from ..protocol.enums import ApprovalOutcome, ApprovalPolicy, TurnOutcome
from ..protocol.envelopes import RequestId, ServerRequest
from ..protocol.generated import methods as m
from ..protocol.threads import is_busy
from ..protocol.turn import (
    CAPTURE_LIMIT,
    Approval,
    Completed,
    Delta,
    Resolved,
    TurnEvent,
    TurnTracker,
    Warning,
)
from .client import Rpc, Subscription
from .threads import join, wait_idle

DEFAULT_TURN_TIMEOUT = 900.0


class ApprovalRecord:
    """One server request seen during the turn; `outcome` changes as it is answered."""

    __slots__ = ("method", "outcome", "request_id", "summary")

    def __init__(self, request_id: RequestId, method: str, summary: str,
                 outcome: ApprovalOutcome = ApprovalOutcome.PENDING) -> None:
        self.request_id = request_id
        self.method = method
        self.summary = summary
        self.outcome = outcome

    def as_dict(self) -> dict[str, Any]:
        return {"requestId": self.request_id, "method": self.method, "summary": self.summary,
                "outcome": self.outcome.value}


class SayResult(NamedTuple):
    thread_id: str
    turn_id: str | None
    status: TurnOutcome
    reply: str
    approvals: list[ApprovalRecord] = []  # noqa: RUF012 - never mutated
    error: dict[str, Any] | None = None
    dropped_bytes: int = 0
    truncated: bool = False  # the reply was longer than the capture limit (10 MiB)
    reply_bytes: int = 0  # the reply's full size in bytes, before any cut

    def as_dict(self) -> dict[str, Any]:
        return {"thread_id": self.thread_id, "turn_id": self.turn_id,
                "status": self.status.value, "reply": self.reply,
                "approvals": [a.as_dict() for a in self.approvals],
                "error": self.error, "truncated": self.truncated}


class SayProgress:
    """How far a say() got, readable even when it raised or was cancelled.

    `turn_start_sent` is true from the moment `turn/start` went out until an error
    *answer* proves no turn exists: from then on, the turn may be running and a retry
    could run it twice.
    """

    __slots__ = ("turn_id", "turn_start_sent")

    def __init__(self) -> None:
        self.turn_start_sent = False
        self.turn_id: str | None = None


class _TurnRun:
    """One turn: feeds the subscription into the tracker and acts on its events."""

    def __init__(self, rpc: Rpc, thread_id: str, policy: ApprovalPolicy,
                 approval_timeout: float, on_delta: Callable[[str], None] | None,
                 on_approval: Callable[[str], None] | None) -> None:
        self.rpc = rpc
        self.tracker = TurnTracker(thread_id)
        self.policy = policy
        self.approval_timeout = approval_timeout
        self.on_delta = on_delta
        self.on_approval = on_approval
        self.approvals: dict[RequestId, ApprovalRecord] = {}
        self.deadlines: dict[RequestId, asyncio.Task[None]] = {}
        self.done = asyncio.Event()
        # Events before our turn/start belong to someone else's turn: not fed to the tracker.
        self.feeding = False
        self.lost: str | None = None

    async def pump(self, sub: Subscription) -> None:
        while True:
            ev = await sub.get()
            if ev is None:
                self._lose()
                return
            if isinstance(ev, ServerRequest) and (
                    ev.method not in approval_table.TABLE
                    or not isinstance(ev.params.get("threadId",
                                                    ev.params.get("conversationId")), str)):
                # Unknown to us, or about the connection rather than a thread
                # (`attestation/generate`, `account/chatgptAuthTokens/refresh`): the turn
                # tracker would filter it out, so answer fail-closed at once — never leave
                # codex waiting.
                await self._answer(ev.id, approval_table.fail_closed(ev.method, ev.params))
                continue
            if self.feeding:
                await self.handle(self.tracker.feed(ev))

    async def handle(self, events: list[TurnEvent]) -> None:
        for event in events:
            if isinstance(event, Delta):
                if self.on_delta:
                    self.on_delta(event.text)
            elif isinstance(event, Approval):
                await self._approval(event.request)
            elif isinstance(event, Resolved):
                self._resolved(event.request_id)
            elif isinstance(event, Warning):
                self._say(f"codex error: {event.message}")
            elif isinstance(event, Completed):
                self.done.set()

    async def _approval(self, req: ServerRequest) -> None:
        record = ApprovalRecord(req.id, req.method,
                                approval_table.describe(req.method, req.params))
        self.approvals[req.id] = record
        decision = approval_table.decide(req.method, req.params, self.policy)
        if isinstance(decision, approval_table.Defer):
            record.outcome = ApprovalOutcome.WAITING
            self._say(f"approval: {record.summary} — waiting for the TUI "
                      f"(fail-closed in {self.approval_timeout:g} s)")
            self.deadlines[req.id] = asyncio.create_task(
                self._deadline(req.id, decision.fallback))
            return
        await self._answer(req.id, decision)
        approval = approval_table.is_approval(req.method, req.params)
        if decision.error is not None:
            record.outcome = ApprovalOutcome.REFUSED
        elif approval and self.policy is ApprovalPolicy.ACCEPT:
            record.outcome = ApprovalOutcome.ACCEPTED
        else:
            record.outcome = ApprovalOutcome.DECLINED
        self._say(f"approval: {record.summary} — {record.outcome} by --approvals {self.policy}"
                  if approval
                  else f"request: {record.summary} — {record.outcome} (bridge has no UI)")

    async def _deadline(self, request_id: RequestId, fallback: approval_table.Reply) -> None:
        await asyncio.sleep(self.approval_timeout)
        self.deadlines.pop(request_id, None)
        record = self.approvals[request_id]
        record.outcome = ApprovalOutcome.DECLINED_AFTER_DEADLINE
        self._say(f"approval: {record.summary} — nobody answered in "
                  f"{self.approval_timeout:g} s, declined (fail-closed)")
        await self._answer(request_id, fallback)

    def _resolved(self, request_id: RequestId) -> None:
        task = self.deadlines.pop(request_id, None)
        if task is not None:
            task.cancel()
            record = self.approvals[request_id]
            record.outcome = ApprovalOutcome.ANSWERED_IN_TUI
            self._say(f"approval: {record.summary} — answered in the TUI")

    async def _answer(self, request_id: RequestId, reply: approval_table.Reply) -> None:
        try:
            if reply.error is not None:
                await self.rpc.respond_error(request_id, *reply.error)
            else:
                await self.rpc.respond(request_id, reply.result)
        except ConnectionLostError:
            # The connection closed under us. Raising here would kill the pump (or a
            # deadline task) silently and leave say() waiting out its whole --timeout.
            self._lose()

    def _lose(self) -> None:
        self.lost = "the connection to the app-server closed during the turn"
        self.done.set()

    def _say(self, line: str) -> None:
        if self.on_approval:
            self.on_approval(line)

    def cancel_deadlines(self) -> None:
        for task in self.deadlines.values():
            task.cancel()
        self.deadlines.clear()

    def result(self, turn_id: str, timed_out: bool, timeout: float) -> SayResult:
        tracker = self.tracker
        done = tracker.completed
        if timed_out:
            status = TurnOutcome.TIMED_OUT
        else:
            status = (TurnOutcome.parse(done.status) or TurnOutcome.FAILED) if done \
                else TurnOutcome.FAILED
        error = done.error if done else None
        if timed_out:
            error = {"message": f"no turn/completed within {timeout:g} s; the turn may still "
                                "be running in the TUI"}
        return SayResult(self.tracker.thread_id, turn_id, status, tracker.reply,
                         list(self.approvals.values()), error, tracker.dropped_bytes,
                         tracker.truncated,
                         tracker.reply_bytes or len(tracker.reply.encode("utf-8")))


async def say(rpc: Rpc, thread_id: str, text: str, *,
              approvals: ApprovalPolicy = ApprovalPolicy.TUI,
              approval_timeout: float = DEFAULT_APPROVAL_TIMEOUT,
              timeout: float = DEFAULT_TURN_TIMEOUT,
              busy_timeout: float | None = None,
              turn_cwd: str | None = None,
              join_first: bool = True,
              steer: bool = False,
              capture_limit: int = CAPTURE_LIMIT,
              on_delta: Callable[[str], None] | None = None,
              on_approval: Callable[[str], None] | None = None,
              progress: SayProgress | None = None) -> SayResult:
    """Start a turn with `text` on the thread and follow it to the end.

    Turn outcomes (completed / interrupted / failed / timed out / busy) come back as the
    result's `status`; transport and target problems raise. `join_first=False` is for
    the client that started the thread itself (already subscribed, and not joinable
    before its first turn).

    If a turn is already running (the human's, say), codex 0.169.0 would fold our
    message into it: turn/start returns the *running* turn's id. Unless `steer` asks for
    exactly that, we wait until the thread is idle (at most `busy_timeout`, default the
    whole `timeout`; then BUSY, nothing sent) and start a turn of our own.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    progress = progress or SayProgress()
    run = _TurnRun(rpc, thread_id, approvals, approval_timeout, on_delta, on_approval)
    run.tracker.capture_limit = capture_limit
    sub = rpc.subscribe()
    pump = asyncio.create_task(run.pump(sub), name="codexbridge-turn-pump")
    try:
        joined = await join(rpc, thread_id) if join_first else {}
        thread = joined.get("thread") if isinstance(joined, dict) else None
        if isinstance(thread, dict) and is_busy(thread.get("status")) and not steer:
            run._say("a turn is running on this thread; waiting for it to finish "
                     "(--steer adds the message to it instead)")
            wait = max(0.0, deadline - loop.time())
            if busy_timeout is not None:
                wait = min(wait, busy_timeout)
            if not await wait_idle(rpc, thread_id, wait):
                return SayResult(thread_id, None, TurnOutcome.BUSY, "", [], {
                    "message": f"the thread stayed busy for {wait:g} s; nothing was sent"})
        run.feeding = True
        params: dict[str, Any] = {"threadId": thread_id,
                                  "input": [{"type": "text", "text": text,
                                             "text_elements": []}]}
        if turn_cwd:
            params["cwd"] = turn_cwd
        progress.turn_start_sent = True
        try:
            started = await rpc.request(m.TURN_START, params)
        except RpcError:
            # An error *answer* is a refusal: no turn exists. Only silence (timeout,
            # lost connection) leaves the turn's fate unknown.
            progress.turn_start_sent = False
            raise
        turn_id = str((started.get("turn") or {}).get("id", ""))
        progress.turn_id = turn_id
        await run.handle(run.tracker.bind(turn_id))
        timed_out = False
        try:
            await asyncio.wait_for(run.done.wait(), max(0.0, deadline - loop.time()))
        except asyncio.TimeoutError:
            timed_out = True
        if run.lost and run.tracker.completed is None:
            raise ConnectionLostError(run.lost)
        return run.result(turn_id, timed_out, timeout)
    finally:
        run.cancel_deadlines()
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await pump
        sub.close()
