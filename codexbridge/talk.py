"""Talking into a live thread: list, resolve, say, read.

This module sequences requests over one AppServerClient; every decision (which thread,
which events belong to the turn, what to answer an approval) is made by the pure core in
`codexbridge.protocol`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, NamedTuple

from .client import AppServerClient
from .errors import ConnectionLostError, NoRolloutError, NoThreadError, RpcError
from .protocol import approvals as approval_table
from .protocol.envelopes import RequestId, ServerRequest
from .protocol.threads import (
    ThreadInfo,
    looks_like_thread_id,
    resolve,
    status_type,
    visible,
)
from .protocol.turn import (
    CAPTURE_LIMIT,
    AgentMessage,
    Approval,
    Completed,
    Delta,
    Resolved,
    TurnEvent,
    TurnTracker,
    Warning,
)

DEFAULT_APPROVAL_TIMEOUT = 300.0
DEFAULT_TURN_TIMEOUT = 900.0
NO_ROLLOUT_HINT = ("the thread has no rollout yet: send one message in the Codex TUI first "
                   "(a thread can be joined once its first turn has started)")


async def _paged(client: AppServerClient, method: str, params: dict[str, Any],
                 max_pages: int = 1000) -> list[Any]:
    """Every `data` entry of a cursor-paginated method."""
    out: list[Any] = []
    cursor: Any = None
    for _ in range(max_pages):
        page = await client.request(method, {**params, **({"cursor": cursor} if cursor else {})})
        out.extend(page.get("data") or [])
        cursor = page.get("nextCursor")
        if not cursor:
            break
    return out


async def _read_loaded(client: AppServerClient) -> list[Any]:
    """`thread/read` of every loaded thread; a failed read is an exception in the list."""
    ids = await _paged(client, "thread/loaded/list", {})
    return await asyncio.gather(*(client.request("thread/read", {"threadId": tid})
                                  for tid in ids if isinstance(tid, str)),
                                return_exceptions=True)


def _newest_first(threads: list[ThreadInfo]) -> list[ThreadInfo]:
    return sorted(threads, key=lambda t: (t.updated_at or 0), reverse=True)


async def list_threads(client: AppServerClient, *, include_all: bool = False) -> list[ThreadInfo]:
    """Threads loaded in the app-server (works before any turn exists)."""
    # Parsed through the pydantic models; imported here so `talk say` never pays for them.
    from pydantic import ValidationError

    from .protocol.models import ThreadReadResult

    threads: list[ThreadInfo] = []
    for read in await _read_loaded(client):
        if not isinstance(read, dict):
            continue
        try:
            threads.append(ThreadInfo.from_model(ThreadReadResult.model_validate(read).thread))
        except ValidationError:
            continue  # no thread object: nothing to list
    return visible(_newest_first(threads), include_all)


async def find_target(client: AppServerClient, selector: str | None,
                      cwd: str | None = None) -> ThreadInfo:
    """The thread `selector` (id or exact name) means; see protocol.threads.resolve."""
    if selector and looks_like_thread_id(selector) and not cwd:
        # An explicit id needs no listing: one thread/read confirms it is loaded, which
        # saves a request per loaded thread on every `say --thread ID`.
        try:
            read = await client.request("thread/read", {"threadId": selector})
        except RpcError:
            pass  # not loaded (or not an id after all): fall back to the full resolution
        else:
            if isinstance(read, dict) and isinstance(read.get("thread"), dict):
                return ThreadInfo.from_thread(read["thread"])
    # Dict-based on purpose: this is `talk say`'s path, where pydantic's import would cost
    # more than the whole request. ThreadInfo.from_thread matches the models' parse.
    threads = [ThreadInfo.from_thread(r["thread"]) for r in await _read_loaded(client)
               if isinstance(r, dict) and isinstance(r.get("thread"), dict)]
    return resolve(_newest_first(threads), selector, cwd)


class ApprovalRecord:
    """One approval seen during the turn; `outcome` changes as it is answered."""

    __slots__ = ("method", "outcome", "request_id", "summary")

    def __init__(self, request_id: RequestId, method: str, summary: str,
                 outcome: str = "pending") -> None:
        self.request_id = request_id
        self.method = method
        self.summary = summary
        self.outcome = outcome

    def as_dict(self) -> dict[str, Any]:
        return {"requestId": self.request_id, "method": self.method, "summary": self.summary,
                "outcome": self.outcome}


class SayResult(NamedTuple):
    thread_id: str
    turn_id: str | None
    status: str  # completed | interrupted | failed | timedOut
    reply: str
    approvals: list[ApprovalRecord] = []  # noqa: RUF012 - never mutated
    error: dict[str, Any] | None = None
    dropped_bytes: int = 0
    truncated: bool = False  # the reply was longer than the capture limit (10 MiB)
    reply_bytes: int = 0  # the reply's full size in bytes, before any cut

    def as_dict(self) -> dict[str, Any]:
        return {"thread_id": self.thread_id, "turn_id": self.turn_id, "status": self.status,
                "reply": self.reply, "approvals": [a.as_dict() for a in self.approvals],
                "error": self.error, "truncated": self.truncated}


class _TurnRun:
    """One turn: feeds the subscription into the tracker and acts on its events."""

    def __init__(self, client: AppServerClient, thread_id: str, policy: approval_table.Policy,
                 approval_timeout: float, on_delta: Callable[[str], None] | None,
                 on_approval: Callable[[str], None] | None) -> None:
        self.client = client
        self.tracker = TurnTracker(thread_id)
        self.policy = policy
        self.approval_timeout = approval_timeout
        self.on_delta = on_delta
        self.on_approval = on_approval
        self.approvals: dict[RequestId, ApprovalRecord] = {}
        self.deadlines: dict[RequestId, asyncio.Task[None]] = {}
        self.done = asyncio.Event()
        self.idle = asyncio.Event()
        # Events before our turn/start belong to someone else's turn: not fed to the tracker.
        self.feeding = False
        self.lost: str | None = None

    async def pump(self, sub: Any) -> None:
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
                reply = approval_table.fail_closed(ev.method, ev.params)
                await self._answer(ev.id, reply)
                continue
            if (ev.method == "thread/status/changed"
                    and ev.params.get("threadId") == self.tracker.thread_id):
                if status_type(ev.params.get("status")) == "active":
                    self.idle.clear()
                else:
                    self.idle.set()
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
                if self.on_approval:
                    self.on_approval(f"codex error: {event.message}")
            elif isinstance(event, Completed):
                self.done.set()
            elif isinstance(event, AgentMessage):
                pass

    async def _approval(self, req: ServerRequest) -> None:
        record = ApprovalRecord(req.id, req.method,
                                approval_table.describe(req.method, req.params))
        self.approvals[req.id] = record
        decision = approval_table.decide(req.method, req.params, self.policy)
        if isinstance(decision, approval_table.Defer):
            record.outcome = "waiting for the TUI"
            self._say(f"approval: {record.summary} — waiting for the TUI "
                      f"(fail-closed in {self.approval_timeout:g} s)")
            self.deadlines[req.id] = asyncio.create_task(
                self._deadline(req.id, decision.fallback))
            return
        await self._answer(req.id, decision)
        if decision.error is not None:
            record.outcome = "refused (error)"
        elif approval_table.is_approval(req.method, req.params) and self.policy == "accept":
            record.outcome = "accepted"
        else:
            record.outcome = "declined"
        self._say(f"approval: {record.summary} — {record.outcome} by --approvals {self.policy}"
                  if approval_table.is_approval(req.method, req.params)
                  else f"request: {record.summary} — {record.outcome} (bridge has no UI)")

    async def _deadline(self, request_id: RequestId, fallback: approval_table.Reply) -> None:
        await asyncio.sleep(self.approval_timeout)
        self.deadlines.pop(request_id, None)
        record = self.approvals[request_id]
        record.outcome = "declined after deadline (fail-closed)"
        self._say(f"approval: {record.summary} — nobody answered in "
                  f"{self.approval_timeout:g} s, declined (fail-closed)")
        await self._answer(request_id, fallback)

    def _resolved(self, request_id: RequestId) -> None:
        task = self.deadlines.pop(request_id, None)
        if task is not None:
            task.cancel()
            record = self.approvals[request_id]
            record.outcome = "answered in the TUI"
            self._say(f"approval: {record.summary} — answered in the TUI")

    async def _answer(self, request_id: RequestId, reply: approval_table.Reply) -> None:
        try:
            if reply.error is not None:
                await self.client.respond_error(request_id, *reply.error)
            else:
                await self.client.respond(request_id, reply.result)
        except ConnectionLostError:
            # The socket closed under us. Raising here would kill the pump (or a deadline
            # task) silently and leave say() waiting out its whole --timeout.
            self._lose()

    def _lose(self) -> None:
        self.lost = "the connection to the app-server closed during the turn"
        self.done.set()
        self.idle.set()

    def _say(self, line: str) -> None:
        if self.on_approval:
            self.on_approval(line)

    def cancel_deadlines(self) -> None:
        for task in self.deadlines.values():
            task.cancel()
        self.deadlines.clear()


async def join(client: AppServerClient, thread_id: str) -> dict[str, Any]:
    """Subscribe this connection to the thread (`thread/resume`, history excluded)."""
    try:
        result: dict[str, Any] = await client.request(
            "thread/resume", {"threadId": thread_id, "excludeTurns": True})
    except NoRolloutError as exc:
        raise NoRolloutError(exc.rpc_code, f"{NO_ROLLOUT_HINT} [{exc.message}]",
                             exc.data) from None
    return result


async def say(client: AppServerClient, thread_id: str, text: str, *,
              approvals: approval_table.Policy = "tui",
              approval_timeout: float = DEFAULT_APPROVAL_TIMEOUT,
              timeout: float = DEFAULT_TURN_TIMEOUT,
              turn_cwd: str | None = None,
              join_first: bool = True,
              steer: bool = False,
              capture_limit: int = CAPTURE_LIMIT,
              on_delta: Callable[[str], None] | None = None,
              on_approval: Callable[[str], None] | None = None) -> SayResult:
    """Start a turn with `text` on the thread and follow it to the end.

    Turn outcomes (completed / interrupted / failed / timed out) come back as the result's
    `status`; transport and target problems raise. `join_first=False` is for the client
    that started the thread itself (already subscribed, and not joinable before its first
    turn).

    If a turn is already running (the human's, say), codex 0.169.0 would fold our message
    into it: turn/start returns the *running* turn's id. Unless `steer` asks for exactly
    that, we wait until the thread is idle and start a turn of our own.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    run = _TurnRun(client, thread_id, approvals, approval_timeout, on_delta, on_approval)
    run.tracker.capture_limit = capture_limit
    sub = client.subscribe()
    pump = asyncio.create_task(run.pump(sub), name="codexbridge-turn-pump")
    try:
        joined = await join(client, thread_id) if join_first else {}
        thread = joined.get("thread") if isinstance(joined, dict) else None
        busy = isinstance(thread, dict) and status_type(thread.get("status")) == "active"
        if busy and not steer:
            if on_approval:
                on_approval("a turn is running on this thread; waiting for it to finish "
                            "(--steer adds the message to it instead)")
            try:
                await asyncio.wait_for(run.idle.wait(), max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:
                return SayResult(thread_id, None, "timedOut", "", [], {
                    "message": f"the thread stayed busy for {timeout:g} s; nothing was sent"})
            if run.lost:
                raise ConnectionLostError(run.lost)
        run.feeding = True
        params: dict[str, Any] = {"threadId": thread_id,
                                  "input": [{"type": "text", "text": text,
                                             "text_elements": []}]}
        if turn_cwd:
            params["cwd"] = turn_cwd
        started = await client.request("turn/start", params)
        turn_id = str((started.get("turn") or {}).get("id", ""))
        await run.handle(run.tracker.bind(turn_id))
        timed_out = False
        try:
            await asyncio.wait_for(run.done.wait(), max(0.0, deadline - loop.time()))
        except asyncio.TimeoutError:
            timed_out = True
        if run.lost and run.tracker.completed is None:
            raise ConnectionLostError(run.lost)
        tracker = run.tracker
        done = tracker.completed
        status = "timedOut" if timed_out else (done.status if done else "failed")
        error = done.error if done else None
        if timed_out:
            error = {"message": f"no turn/completed within {timeout:g} s; the turn may still "
                                "be running in the TUI"}
        return SayResult(thread_id, turn_id, status, tracker.reply,
                         list(run.approvals.values()), error, tracker.dropped_bytes,
                         tracker.truncated,
                         tracker.reply_bytes or len(tracker.reply.encode("utf-8")))
    finally:
        run.cancel_deadlines()
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await pump
        sub.close()


class TurnRecord(NamedTuple):
    id: str
    status: str
    started_at: int | None
    items: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "startedAt": self.started_at,
                "items": self.items}


async def read_history(client: AppServerClient, thread_id: str, *,
                       page_size: int = 50) -> list[TurnRecord]:
    """The whole thread, oldest first, paged through thread/turns/list and
    thread/items/list (TUI threads are paginated; full hydration is deprecated)."""
    from .protocol.models import ItemsListResult, TurnsListResult  # lazy: pydantic

    try:
        turns = await _paged(client, "thread/turns/list",
                             {"threadId": thread_id, "limit": page_size,
                              "sortDirection": "asc", "itemsView": "notLoaded"})
    except NoRolloutError:
        raise NoThreadError(f"thread {thread_id} has no history yet",
                            details={"thread_id": thread_id}) from None
    items = await _paged(client, "thread/items/list",
                         {"threadId": thread_id, "limit": page_size, "sortDirection": "asc"})
    # The pages' `data` arrays, concatenated, parse as one result each.
    by_turn: dict[str, list[dict[str, Any]]] = {}
    for entry in ItemsListResult.model_validate({"data": items}).data:
        by_turn.setdefault(str(entry.turn_id), []).append(entry.item.as_dict())
    return [TurnRecord(t.id, str(t.status), t.started_at, by_turn.get(t.id, []))
            for t in TurnsListResult.model_validate({"data": turns}).data]


def render_item(item: dict[str, Any]) -> str | None:
    """One transcript line for an item, or None for items a reader does not need."""
    kind = item.get("type")
    if kind == "userMessage":
        parts = [c.get("text", "") for c in item.get("content") or []
                 if isinstance(c, dict) and c.get("type") == "text"]
        return "› " + "\n  ".join("".join(parts).splitlines() or [""])
    if kind == "agentMessage":
        return "• " + "\n  ".join(str(item.get("text", "")).splitlines() or [""])
    if kind == "commandExecution":
        code = item.get("exitCode")
        return f"$ {item.get('command', '')}  [{item.get('status')}" + (
            f", exit {code}]" if code is not None else "]")
    if kind == "fileChange":
        return f"✎ file change [{item.get('status')}]"
    return None
