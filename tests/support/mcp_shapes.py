"""The `data` every MCP tool returns, read off real calls: what docs/mcp.md's result table
is rendered from (`scripts/render-docs`, block `mcp-results`), so the documented fields
cannot drift from the code.

Each tool runs through the real server (`build_server`) over the SDK's in-memory client:
role claude against `MemoryAppServer` (the talk client end to end, no socket), role codex
against a mailbox directory of its own — all in a throwaway state home. The courier of a
`wait: false` send is not started: its receipt is what is documented. `bridge_handoff`
is left to docs/handoff.md (it needs two live sessions to say anything).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from mcp import Client

from codexbridge.codex.client import AppServerClient
from codexbridge.codex.endpoint import Endpoint
from codexbridge.mcp.artifacts import ArtifactStore
from codexbridge.mcp.runtime import Runtime
from codexbridge.mcp.server import build_server
from codexbridge.mcp.settings import load

from . import payloads
from .memory_appserver import MemoryAppServer

Shape = tuple[str, dict[str, Any]]  # (the row's label, the call's `data`)
NESTED_MAX = 16  # a nested object with more keys (every setting, every code) is `{…}`
# What a Claude Code or Codex session around the renderer would otherwise put in the
# calls (a reply mailbox, a calling thread): the shapes must not depend on who runs it.
_SESSION_VARS = ("CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_MESSAGING_SOCKET", "CODEX_THREAD_ID",
                 "CODEX_BRIDGE_CONVERSATION", "CODEX_BRIDGE_URL", "CODEX_BRIDGE_MAILBOX",
                 "CODEX_BRIDGE_INBOX_DIR")


@contextlib.contextmanager
def _private_state() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="codexbridge-shapes-") as tmp:
        env = {k: v for k, v in os.environ.items() if k not in _SESSION_VARS}
        env.update({"CODEX_BRIDGE_HOME": str(Path(tmp) / "state"),
                    "CODEX_BRIDGE_DAEMON": "off", "CODEX_BRIDGE_LIVE": "0"})
        with mock.patch.dict(os.environ, env, clear=True):
            yield Path(tmp)


def _runtime(role: str, tmp: Path, server: MemoryAppServer) -> Runtime:
    s = load(role, {})
    store = ArtifactStore(tmp / "artifacts", role, ttl=s.artifact_ttl,
                          max_bytes=s.artifact_store_max)

    @contextlib.asynccontextmanager
    async def connect() -> AsyncIterator[AppServerClient]:
        async with AppServerClient("ws://memory", connector=server.connector) as client:
            yield client

    return Runtime(settings=dataclasses.replace(s, queue_wait=5.0), store=store,
                   connect=connect, endpoint=lambda: Endpoint("ws://memory", None, "test"),
                   inbox=lambda: str(tmp / "inbox"))


class ShapeError(RuntimeError):
    """A tool call failed: the table cannot be rendered from it."""


class _Caller:
    """Calls tools and keeps failures until the client is closed: raised inside the
    SDK's task group they would come out wrapped in exception groups."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.failed: list[str] = []

    async def __call__(self, tool: str, args: dict[str, Any] | None = None
                       ) -> dict[str, Any]:
        result = await self.client.call_tool(tool, args or {})
        sc = result.structured_content
        if not (isinstance(sc, dict) and sc.get("ok") is True
                and isinstance(sc.get("data"), dict)):
            error = sc.get("error") if isinstance(sc, dict) else sc
            self.failed.append(f"{tool} {args or {}}: {error}")
            return {}
        data: dict[str, Any] = sc["data"]
        return data

    def check(self) -> None:
        if self.failed:
            raise ShapeError("; ".join(self.failed))


async def _claude_role(tmp: Path) -> list[Shape]:
    first = payloads.turn(items=[payloads.user_message("first"),
                                 payloads.agent_message("MOCK REPLY: first")])
    server = MemoryAppServer(threads=[payloads.thread()], turns=[first])
    rt = _runtime("claude", tmp, server)
    art = rt.store.create("x" * 100, kind="reply")
    out: list[Shape] = []
    async with Client(build_server(rt.settings, rt), mode="legacy") as client:
        call = _Caller(client)
        out.append(("`codex_threads_list`", await call("codex_threads_list")))
        out.append(("`codex_thread_read`", await call("codex_thread_read")))
        out.append(("`codex_message_send`", await call("codex_message_send", {"text": "hi"})))
        with mock.patch("codexbridge.messages.courier_link.ensure", return_value=True):
            receipt = await call("codex_message_send", {"text": "later", "wait": False})
        out.append(("`codex_message_send` with `wait: false`", receipt))
        out.append(("`codex_delivery_status` with `deliveryId`",
                    await call("codex_delivery_status",
                               {"deliveryId": receipt.get("deliveryId", "?")})))
        out.append(("`codex_delivery_status` without", await call("codex_delivery_status")))
        out.append(("`bridge_output_read`",
                    await call("bridge_output_read", {"artifactId": art.id})))
        # last: its `deliveries` then has a record to show the shape of
        out.append(("`bridge_status` (both roles)", await call("bridge_status")))
    call.check()
    return out


async def _codex_role(tmp: Path) -> list[Shape]:
    rt = _runtime("codex", tmp, MemoryAppServer())
    out: list[Shape] = []
    async with Client(build_server(rt.settings, rt), mode="legacy") as client:
        call = _Caller(client)
        out.append(("`claude_message_send`", await call(
            "claude_message_send", {"text": "hello", "mailbox": "web", "new": True})))
        out.append(("`claude_mailbox_peek`",
                    await call("claude_mailbox_peek", {"mailbox": "web"})))
        out.append(("`claude_mailboxes_list`", await call("claude_mailboxes_list")))
    call.check()
    return out


def shapes() -> list[Shape]:
    """Every documented tool's `data`, from one call each (two for the variants)."""
    with _private_state() as tmp:
        found = asyncio.run(_claude_role(tmp)) + asyncio.run(_codex_role(tmp))
    status = [s for s in found if s[0].startswith("`bridge_status`")]
    return status + [s for s in found if s not in status]  # the shared tool first


def _fields(value: Any) -> str:
    """`{a, b}` for an object, `[{a, b}]` for a list of objects, else nothing."""
    if isinstance(value, list) and value and isinstance(value[0], dict):
        inner = _fields(value[0])
        return f" [{inner.strip()}]" if inner else ""
    if isinstance(value, dict) and value:
        if len(value) > NESTED_MAX:
            return " {…}"
        return " {" + ", ".join(f"`{k}`" for k in value) + "}"
    return ""


def table() -> str:
    rows = ["| tool | `data` fields, in the order the code returns them |", "|---|---|"]
    for label, data in shapes():
        rows.append(f"| {label} | " + ", ".join(f"`{k}`{_fields(v)}" for k, v in data.items())
                    + " |")
    return "\n".join(rows) + "\n"
