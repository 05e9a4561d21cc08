"""Long asks as MCP tasks: `codex_message_send` (wait=true) answered at once with a task
handle, to a client that says it takes one — Claude Code's interactive session (the
`io.modelcontextprotocol/tasks` extension of protocol 2026-07-28: spikes/mcp_tasks).

    tools/call      the client's request `_meta` lists the extension: the tool runs as
                    it always does, in the background, and the call is answered as soon
                    as its delivery is recorded — a task whose id IS the delivery id.
                    A call that fails before (no thread, a hop over budget, a bad
                    argument) is answered as today. Any other client (`claude -p`, a
                    subagent, Codex, a plain SDK client), wait=false and every other
                    tool: exactly today's call.
    tasks/get       answered when the call ends, or after HOLD_S (a long poll: the reply
                    does not wait for the client's next poll). The task follows its
                    record: queued / running → `working`; an approval waiting in the
                    Codex TUI → `input_required` (no input requests: the human answers
                    it there; the client keeps polling, measured in the binary);
                    the tool's end → `completed` with the very result the blocking call
                    returns, or `failed` with its error. Each new status is noted on
                    the record; the first `completed` delivers it: the session took
                    the reply.
    tasks/cancel    interrupts our Codex turn (or takes the message back out of codex's
                    queue); idempotent (Claude Code sends it twice). The record fails,
                    saying the asker stopped it.

The reply never arrives twice and is never silently lost: until the session takes it,
the record is a task's (`ToCodex.task`) and names the session's mailbox; the courier
watches this server's pid meanwhile, and should the server end first (the session quit)
it follows the turn and leaves the answer as mail there, as a wait=false send does.

The task table lives in this server's memory: a task lives as long as its server, which
is as long as the Claude session that asked.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    CancelTaskRequestParams,
    GetTaskRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..codex.protocol.enums import WireEnum
from ..jsontypes import JsonRecord
from .results import SdkResult

if TYPE_CHECKING:
    from typing import TypeAlias

    from ..jsontypes import JsonObject, JsonValue
    from ..messages.to_codex import Blocking
    from .runtime import Runtime

TASKS = "io.modelcontextprotocol/tasks"
ASKS = frozenset({"codex_message_send"})  # the tools that wait on the other agent
# Claude Code polls at what we say, read afresh from every answer (clamped to 250 ms …
# 30 s; spikes/mcp_tasks): often while a short ask's answer is near, less once it runs long.
POLL_MS, POLL_LONG_MS, LONG_AFTER = 250, 1000, 30.0
# A poll of a running task is answered the moment the call ends, or after this long
# ("working"): the reply reaches the client at once rather than at its next poll.
HOLD_S = 2.0
# A task whose end its client was told is kept this long for a repeated poll, then let
# go: a long session's results do not pile up in the server's memory.
KEEP_TOLD_S = 3600.0
STOPPED = ("stopped by the asker (the MCP task was cancelled: Claude Code's TaskStop); "
           "its Codex turn was interrupted")

# Set for the tool body a task runs: `blocking_say` tells it the recorded request.
ASKING: contextvars.ContextVar[Callable[[Blocking], None] | None] = \
    contextvars.ContextVar("codexbridge_task_asking", default=None)


class TaskStatus(WireEnum):
    """A task's status on the wire (the extension's vocabulary, as Claude Code reads it)."""

    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def final(self) -> bool:
        return self in (TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED)


class SendArgs(JsonRecord):
    """What a task needs to know of a send's arguments (the tool reads them all)."""

    wait: JsonValue = True


View: TypeAlias = "tuple[TaskStatus, JsonObject]"  # a status, and the answer that says it


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class AskTask:
    """One task: the tool call running in the background, and its delivery."""

    id: str
    runner: asyncio.Task[HandlerResult]
    created: str = field(default_factory=_now)
    started: float = field(default_factory=time.monotonic)
    stopped: bool = False
    told: TaskStatus | None = None  # the status the client was last given
    ended: float | None = None  # when the client was told its end (monotonic)


def offered(ctx: ServerRequestContext[Any, Any]) -> bool:
    """The calling request says its client takes a task for an answer (2026-07-28 era:
    per request; a legacy session never gets one — its wire has no such result)."""
    caps = ctx.session.client_capabilities
    return (ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and caps is not None
            and TASKS in (caps.extensions or {}))


class AskTasks(Extension):
    """The tasks extension for the asks of role claude (server.py adds it)."""

    identifier = TASKS

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.tasks: dict[str, AskTask] = {}
        self._keep: set[asyncio.Task[Any]] = set()  # fire-and-forget work, referenced

    def methods(self) -> list[MethodBinding]:
        return [MethodBinding("tasks/get", GetTaskRequestParams, self.get),
                MethodBinding("tasks/cancel", CancelTaskRequestParams, self.cancel)]

    async def intercept_tool_call(self, params: CallToolRequestParams,
                                  ctx: ServerRequestContext[Any, Any],
                                  call_next: CallNext) -> HandlerResult:
        if (params.name not in ASKS or not offered(ctx)
                or SendArgs.read(params.arguments or {}).wait is False):
            return await call_next(ctx)
        told: asyncio.Future[Blocking] = asyncio.get_running_loop().create_future()
        token = ASKING.set(told.set_result)
        async def run() -> HandlerResult:
            return await call_next(ctx)

        try:  # the task copies the context: the tool body sees ASKING
            runner = asyncio.create_task(run(), name=f"task-{params.name}")
        finally:
            ASKING.reset(token)
        await asyncio.wait([told, runner],  # type: ignore[type-var]  # (two result types)
                           return_when=asyncio.FIRST_COMPLETED)
        if not told.done():  # it ended before its request was recorded: today's answer
            told.cancel()
            return runner.result()
        task = AskTask(told.result().record.id, runner)
        now = time.monotonic()
        for old in [t for t in self.tasks.values()
                    if t.ended is not None and now - t.ended > KEEP_TOLD_S]:
            del self.tasks[old.id]
        self.tasks[task.id] = task
        self._spawn(self._courier(task.id))
        return {"resultType": "task", **self._view(task, TaskStatus.WORKING)[1]}

    # -- tasks/get, tasks/cancel ---------------------------------------------------------

    async def get(self, _ctx: ServerRequestContext[Any, Any],
                  params: GetTaskRequestParams) -> JsonObject:
        task = self._task(params.task_id)
        status, view = await self._answer(task)
        if status is not task.told:  # on the record: `talk status` shows it
            task.told = status
            task.ended = time.monotonic() if status.final else None
            await asyncio.to_thread(_told, task.id, status)
        return view

    async def _answer(self, task: AskTask) -> View:
        if not task.stopped and not task.runner.done():
            await asyncio.wait([task.runner], timeout=HOLD_S)
        if task.stopped:
            return self._view(task, TaskStatus.CANCELLED, STOPPED)
        if not task.runner.done():
            return await asyncio.to_thread(self._running, task)
        try:
            result = task.runner.result()
        except Exception as exc:  # the SDK answers a tool's own exception: this is ours
            return self._view(task, TaskStatus.FAILED,
                              error={"message": f"the call failed: {exc!r}"})
        dumped = (result.model_dump(by_alias=True, exclude_none=True, mode="json")
                  if isinstance(result, CallToolResult) else dict(result or {}))
        sdk = SdkResult.read(dumped)
        if sdk.is_error:
            return self._view(task, TaskStatus.FAILED, error={
                "message": sdk.text, "data": sdk.structured_content})
        return self._view(task, TaskStatus.COMPLETED, result=dumped)

    async def cancel(self, _ctx: ServerRequestContext[Any, Any],
                     params: CancelTaskRequestParams) -> JsonObject:
        task = self._task(params.task_id)
        if not task.stopped and not task.runner.done():
            task.stopped = True  # before any await: the second cancel only answers
            await self._stop(task)
        return await self.get(_ctx, GetTaskRequestParams(task_id=task.id))

    # -- the parts -----------------------------------------------------------------------

    def _task(self, task_id: str) -> AskTask:
        task = self.tasks.get(task_id)
        if task is None:
            raise MCPError(code=INVALID_PARAMS, message=f"no task {task_id!r} in this "
                           "codexbridge server (it lives as long as the server)")
        return task

    def _view(self, task: AskTask, status: TaskStatus, message: str | None = None,
              **extra: JsonValue) -> View:
        return status, {"taskId": task.id, "status": status.value, "createdAt": task.created,
                "lastUpdatedAt": _now(),
                "pollIntervalMs": POLL_MS if time.monotonic() - task.started < LONG_AFTER
                else POLL_LONG_MS,
                **({"statusMessage": message} if message else {}), **extra}

    def _running(self, task: AskTask) -> View:
        """A running task as its record stands."""
        from ..messages.records import DeliveryStore, ToCodex  # lazy: the cold MCP start

        record = DeliveryStore().get(task.id, ToCodex)
        if record is not None and record.approval_waiting and not record.state.final:
            return self._view(task, TaskStatus.INPUT_REQUIRED,
                              f"an approval waits for the human in the Codex TUI: "
                              f"{record.approval_waiting}", inputRequests={})
        return self._view(task, TaskStatus.WORKING, f"delivery {task.id}: "
                          + (record.state.value if record is not None else "queued"))

    async def _stop(self, task: AskTask) -> None:
        """Interrupt our turn — or, not started yet, take the message back out of codex's
        queue and stop following it. Never the turn of someone else."""
        from ..messages.to_codex import stop_request  # lazy: the cold MCP start

        if not await stop_request(task.id, self.rt.connect, STOPPED):
            task.runner.cancel()

    async def _courier(self, delivery_id: str) -> None:
        """The courier watches this server for the task (the record is pending)."""
        from ..messages import courier_link  # lazy: the cold MCP start

        await asyncio.to_thread(courier_link.ensure, [delivery_id])

    def _spawn(self, work: Any) -> None:
        job = asyncio.ensure_future(work)
        self._keep.add(job)
        job.add_done_callback(self._keep.discard)


def _told(delivery_id: str, status: TaskStatus) -> None:
    from ..messages.to_codex import task_told  # lazy: the cold MCP start

    task_told(delivery_id, status.value, took_reply=status is TaskStatus.COMPLETED)
