"""The client side of MCP tasks (`io.modelcontextprotocol/tasks`, protocol 2026-07-28) on
the SDK's own `Client`, shaped after what the pinned Claude Code does interactively
(spikes/mcp_tasks): it advertises the extension, takes a `resultType: "task"` answer,
polls `tasks/get` (first at once, then at the server's `pollIntervalMs`) and cancels
with `tasks/cancel`. Used by tests/unit/mcp/test_tasks.py and bench/bench_tasks.py."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from mcp import Client
from mcp.client.extension import ClientExtension, ResultClaim
from mcp_types import (
    CallToolResult,
    CancelTaskRequest,
    CancelTaskRequestParams,
    GetTaskRequest,
    GetTaskRequestParams,
    Result,
)
from pydantic import Field, TypeAdapter

from codexbridge.mcp.tasks import TASKS

MODERN = "2026-07-28"
ANSWER = TypeAdapter(dict[str, Any])


class TaskHandle(Result):
    """The answer a task-backed tools/call gets (the extension's claimed shape)."""

    result_type: Literal["task"] = Field("task", alias="resultType")
    task_id: str
    status: str
    poll_interval_ms: int | None = None


async def _unused(_handle: TaskHandle, _ctx: object) -> CallToolResult:
    raise AssertionError("callers read the handle themselves (allow_claimed)")


class Tasks(ClientExtension):
    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=_unused)]


async def ask(client: Client, args: dict[str, Any],
              tool: str = "codex_message_send") -> TaskHandle | CallToolResult:
    """Call `tool`: a task handle, or (a client or call that gets none) its result."""
    out = await client.session.call_tool(tool, args, allow_claimed=True)
    assert isinstance(out, (TaskHandle, CallToolResult))
    return out


async def task_get(client: Client, task_id: str) -> dict[str, Any]:
    return await client.session.send_request(
        GetTaskRequest(params=GetTaskRequestParams(task_id=task_id)), ANSWER)


async def task_cancel(client: Client, task_id: str) -> dict[str, Any]:
    return await client.session.send_request(
        CancelTaskRequest(params=CancelTaskRequestParams(task_id=task_id)), ANSWER)


async def until(client: Client, task_id: str, status: str, polls: int = 400
                ) -> dict[str, Any]:
    """Poll as Claude Code does — at once, then at the interval the server says — until
    the task is `status` (AssertionError after `polls` polls)."""
    got: dict[str, Any] = {}
    for _ in range(polls):
        got = await task_get(client, task_id)
        if got["status"] == status:
            return got
        await asyncio.sleep(int(got.get("pollIntervalMs") or 250) / 1000.0)
    raise AssertionError(f"task {task_id} never {status}: {got}")
