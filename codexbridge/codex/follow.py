"""Following one turn: feeding the connection's events to the tracker, answering the
turn's server requests by policy, and reporting each approval as it goes.

The decisions are the pure core's (`codex/protocol/turn.py`, `codex/protocol/approvals.py`); this
module acts on them. `turn.py` starts turns and waits on a `TurnFollower`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from ..errors import ConnectionLostError, UsageError
from .client import Rpc, Subscription
from .protocol import approvals as approval_table
from .protocol.enums import ApprovalOutcome, ApprovalPolicy, TurnOutcome
from .protocol.envelopes import RequestId, ServerRequest
from .protocol.turn import (
    CAPTURE_LIMIT,
    Added,
    Approval,
    Completed,
    Delta,
    Resolved,
    TurnEvent,
    TurnTracker,
    Warning,
    thread_of,
)

if TYPE_CHECKING:
    from ..jsontypes import JsonObject
    from .protocol.generated.results import TokenUsageBreakdown


class ApprovalRecord:
    """One server request seen during the turn; `outcome` changes as it is answered."""

    __slots__ = ("method", "outcome", "request_id", "summary")

    def __init__(self, request_id: RequestId, method: str, summary: str,
                 outcome: ApprovalOutcome = ApprovalOutcome.PENDING) -> None:
        self.request_id = request_id
        self.method = method
        self.summary = summary
        self.outcome = outcome

    def as_dict(self) -> JsonObject:
        return {"requestId": self.request_id, "method": self.method, "summary": self.summary,
                "outcome": self.outcome.value}


class SayResult(NamedTuple):
    thread_id: str
    turn_id: str | None
    status: TurnOutcome
    reply: str
    approvals: list[ApprovalRecord] = []  # noqa: RUF012 - never mutated
    error: JsonObject | None = None
    dropped_bytes: int = 0
    truncated: bool = False  # the reply was longer than the capture limit (10 MiB)
    reply_bytes: int = 0  # the reply's full size in bytes, before any cut
    # Words added to the turn by someone else while it ran (the human pressing Enter in
    # the Codex TUI steers it): the reply answers the turn as they steered it.
    added: tuple[str, ...] = ()
    # What the turn's model calls cost, as codex reported each (the turn's usage is
    # their sum); all of them or none: empty when codex said nothing of it, or neither
    # the follower nor codex's rollout saw the whole turn (`turn._whole_usage`).
    usage: tuple[TokenUsageBreakdown, ...] = ()

    def as_dict(self) -> JsonObject:
        return {"thread_id": self.thread_id, "turn_id": self.turn_id,
                "status": self.status.value, "reply": self.reply,
                "approvals": [a.as_dict() for a in self.approvals],
                "error": self.error, "truncated": self.truncated,
                "added": list(self.added)}


class TurnFollower:
    """One turn: feeds the subscription into the tracker and acts on its events."""

    def __init__(self, rpc: Rpc, thread_id: str, policy: ApprovalPolicy,
                 approval_timeout: float, on_delta: Callable[[str], None] | None,
                 on_approval: Callable[[str], None] | None,
                 client_id: str | None = None, capture_limit: int = CAPTURE_LIMIT) -> None:
        self.rpc = rpc
        self.tracker = TurnTracker(thread_id, capture_limit=capture_limit, client_id=client_id)
        self.policy = policy
        self.approval_timeout = approval_timeout
        self.on_delta = on_delta
        self.on_approval = on_approval
        self.approvals: dict[RequestId, ApprovalRecord] = {}
        self.deadlines: dict[RequestId, asyncio.Task[None]] = {}
        self.done = asyncio.Event()
        self.started = asyncio.Event()  # the tracker knows our turn's id
        # Events before our turn/start belong to someone else's turn: not fed to the tracker.
        self.feeding = False
        self.lost: str | None = None
        self.refused = False  # lost because a message was over the frame cap
        # Told when an approval waits for the TUI while no TUI is attached to the thread
        # (`unattended`): the asker hears of it at once rather than after the deadline.
        self.unattended = False
        self.on_unattended: Callable[[ApprovalRecord, float], None] | None = None
        # Told what approval now waits for the TUI (None: none does any more), so a
        # record — and an MCP task's `input_required` — can say so.
        self.on_waiting: Callable[[str | None], None] | None = None

    async def pump(self, sub: Subscription) -> None:
        while True:
            ev = await sub.get()
            if ev is None:
                self._lose(sub.refused)
                return
            if isinstance(ev, ServerRequest) and (ev.method not in approval_table.TABLE
                                                  or not isinstance(thread_of(ev.params), str)):
                # Unknown to us, or about the connection rather than a thread
                # (`attestation/generate`, `account/chatgptAuthTokens/refresh`): the turn
                # tracker would filter it out, so answer fail-closed at once — never leave
                # codex waiting.
                await self._answer(ev.id, approval_table.fail_closed(ev.method, ev.params))
                continue
            if self.feeding:
                events = self.tracker.feed(ev)
                if self.tracker.turn_id is not None:
                    self.started.set()
                await self.handle(events)

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
            elif isinstance(event, Added):
                words = event.text if len(event.text) <= 200 else event.text[:200] + "…"
                self._say("the turn was steered: a message was added to it (the human "
                          f"pressing Enter in the Codex TUI, or another client): {words!r}")
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
            if self.unattended and self.on_unattended is not None:
                self.on_unattended(record, self.approval_timeout)
            self._waiting()
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
        self._waiting()
        await self._answer(request_id, fallback)

    def _resolved(self, request_id: RequestId) -> None:
        task = self.deadlines.pop(request_id, None)
        if task is not None:
            task.cancel()
            record = self.approvals[request_id]
            record.outcome = ApprovalOutcome.ANSWERED_IN_TUI
            self._say(f"approval: {record.summary} — answered in the TUI")
            self._waiting()

    def _waiting(self) -> None:
        if self.on_waiting is not None:
            self.on_waiting(next((r.summary for r in self.approvals.values()
                                  if r.outcome is ApprovalOutcome.WAITING), None))

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

    def _lose(self, refused: str | None = None) -> None:
        self.refused = refused is not None
        self.lost = refused or (
            "the connection to the app-server was lost during the turn (did the "
            "app-server stop?); the turn may have ended with it — once it is back, "
            "`codexbridge talk read` shows what the thread kept. Do not resend blindly")
        self.done.set()

    def _say(self, line: str) -> None:
        if self.on_approval:
            self.on_approval(line)

    def cancel_deadlines(self) -> None:
        for task in self.deadlines.values():
            task.cancel()
        self.deadlines.clear()

    async def bind(self, turn_id: str) -> None:
        """Our turn's id is known from an answer (turn/steer): replay what was buffered."""
        events = self.tracker.bind(turn_id)
        self.started.set()
        await self.handle(events)

    def result(self, turn_id: str, timed_out: bool, timeout: float) -> SayResult:
        """How the turn ended. Lost before it completed: a message over the frame cap is
        the input's fault (UsageError: the next try gets the same message — the courier
        must not wait for the server to come back), anything else a lost connection."""
        tracker = self.tracker
        done = tracker.completed
        if self.lost and done is None:
            raise UsageError(self.lost) if self.refused else ConnectionLostError(self.lost)
        if timed_out:
            status = TurnOutcome.TIMED_OUT
            error: JsonObject | None = {
                "message": f"no turn/completed within {timeout:g} s; the turn may still be "
                           "running in the TUI"}
        else:
            status = (TurnOutcome.parse(done.status) if done else None) or TurnOutcome.FAILED
            error = done.error if done else None
        return SayResult(self.tracker.thread_id, turn_id, status, tracker.reply,
                         list(self.approvals.values()), error, tracker.dropped_bytes,
                         tracker.truncated,
                         tracker.reply_bytes or len(tracker.reply.encode("utf-8")),
                         tuple(a.text for a in tracker.added), tuple(tracker.usage))


