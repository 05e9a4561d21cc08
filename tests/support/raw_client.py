"""A bare app-server client that stands in for "the TUI" or "another client" in tests.

Deliberately independent of codexbridge's own client code, so a bug there cannot hide
itself: one reader task, an id -> future map, every notification kept in order, every
server request queued for the test to answer.

    async with RawClient(url) as c:
        thread = await start_user_thread(c, workdir, "hello")
        assert thread.first_turn.reply == "MOCK REPLY: hello"
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from websockets.asyncio.client import ClientConnection, connect, unix_connect
from websockets.exceptions import ConnectionClosed

Message = dict[str, Any]


class RawRpcError(Exception):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, method: str, error: Any) -> None:
        error = error if isinstance(error, dict) else {"message": repr(error)}
        self.code: int | None = error.get("code")
        self.message: str = str(error.get("message", ""))
        self.data: Any = error.get("data")
        super().__init__(f"{method}: [{self.code}] {self.message}")


class RawClient:
    """One WebSocket connection to `codex app-server`, initialized on enter."""

    def __init__(self, url: str, *, name: str = "test-peer", initialize: bool = True,
                 capabilities: dict[str, Any] | None = None,
                 token: str | None = None) -> None:
        self.url = url
        self.token = token  # a capability token (serve on TCP), sent as a bearer
        self.name = name
        self._do_initialize = initialize
        self._capabilities = capabilities if capabilities is not None else {
            "experimentalApi": False}
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int | str, tuple[str, asyncio.Future[Any]]] = {}
        self._changed = asyncio.Condition()
        self.notifications: list[Message] = []
        self.server_requests: list[Message] = []
        self._server_request_queue: asyncio.Queue[Message] = asyncio.Queue()
        self.closed: BaseException | None = None
        self.init_result: dict[str, Any] | None = None

    async def __aenter__(self) -> RawClient:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
        if self.url.startswith("unix://"):
            self._ws = await unix_connect(self.url[len("unix://"):], uri="ws://localhost/",
                                          compression=None, max_size=None, open_timeout=10,
                                          ping_interval=None, additional_headers=headers)
        else:
            self._ws = await connect(self.url, compression=None, max_size=None,
                                     open_timeout=10, ping_interval=None,
                                     additional_headers=headers)
        self._reader = asyncio.create_task(self._read_loop(), name=f"raw-client-{self.name}")
        if self._do_initialize:
            await self.initialize()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
            self._reader = None

    async def initialize(self) -> dict[str, Any]:
        self.init_result = await self.request("initialize", {
            "clientInfo": {"name": self.name, "title": "codexbridge test peer",
                           "version": "0.0.0"},
            "capabilities": self._capabilities})
        await self.send({"method": "initialized"})
        return self.init_result

    # -- wire ---------------------------------------------------------------------------

    async def send(self, message: Message) -> None:
        if self._ws is None:
            raise ConnectionError("not connected")
        await self._ws.send(json.dumps(message))

    async def request(self, method: str, params: dict[str, Any] | None = None,
                      timeout: float = 30.0) -> Any:
        """Send a request and return its `result`; RawRpcError on an error answer."""
        if self.closed is not None:
            raise ConnectionError(f"connection closed: {self.closed}")
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (method, future)
        message: Message = {"id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self.send(message)
            return await asyncio.wait_for(future, timeout)
        finally:
            self._pending.pop(request_id, None)

    async def respond(self, request_id: int | str, result: Any) -> None:
        """Answer a server request (an approval, say) on this connection."""
        await self.send({"id": request_id, "result": result})

    async def respond_error(self, request_id: int | str, message: str,
                            code: int = -32603) -> None:
        await self.send({"id": request_id, "error": {"code": code, "message": message}})

    async def _read_loop(self) -> None:
        assert self._ws is not None
        try:
            async for frame in self._ws:
                text = frame if isinstance(frame, str) else frame.decode()
                for line in text.splitlines():
                    if line.strip():
                        await self._dispatch(json.loads(line))
        except ConnectionClosed as exc:
            self.closed = exc
        except Exception as exc:  # a malformed frame must not leave waiters hanging
            self.closed = exc
        else:
            self.closed = ConnectionError("server closed the connection")
        finally:
            for method, future in list(self._pending.values()):
                if not future.done():
                    future.set_exception(ConnectionError(f"{method}: connection closed"))
            async with self._changed:
                self._changed.notify_all()

    async def _dispatch(self, message: Message) -> None:
        has_id, has_method = "id" in message, "method" in message
        if has_id and has_method:
            self.server_requests.append(message)
            self._server_request_queue.put_nowait(message)
        elif has_id:
            entry = self._pending.get(message["id"])
            if entry is not None and not entry[1].done():
                method, future = entry
                if "error" in message:
                    future.set_exception(RawRpcError(method, message["error"]))
                else:
                    future.set_result(message.get("result"))
        elif has_method:
            self.notifications.append(message)
        async with self._changed:
            self._changed.notify_all()

    # -- waiting ------------------------------------------------------------------------

    def mark(self) -> int:
        """The index the next notification will get; pass as `since=` to ignore older ones."""
        return len(self.notifications)

    async def wait_for(self, predicate: Callable[[Message], bool], timeout: float = 30.0,
                       *, since: int = 0) -> Message:
        """The first notification at index >= `since` matching `predicate` (already here or not)."""
        async def scan() -> Message:
            index = since
            async with self._changed:
                while True:
                    while index < len(self.notifications):
                        note = self.notifications[index]
                        index += 1
                        if predicate(note):
                            return note
                    if self.closed is not None:
                        raise ConnectionError(f"connection closed: {self.closed}")
                    await self._changed.wait()
        return await asyncio.wait_for(scan(), timeout)

    async def wait_method(self, method: str, timeout: float = 30.0, *, since: int = 0,
                          **params: Any) -> Message:
        """Shorthand: a notification with this method whose params contain `params`."""
        def match(note: Message) -> bool:
            got = note.get("params") or {}
            return note.get("method") == method and all(got.get(k) == v
                                                        for k, v in params.items())
        return await self.wait_for(match, timeout, since=since)

    async def next_server_request(self, timeout: float = 30.0) -> Message:
        """The next server request not yet taken by an earlier call."""
        return await asyncio.wait_for(self._server_request_queue.get(), timeout)


# -- helpers: what a TUI (or any client) does ---------------------------------------------

def text_input(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text, "text_elements": []}]


@dataclass
class TurnResult:
    """A finished turn as one subscribed client saw it."""

    thread_id: str
    turn_id: str
    status: str
    reply: str | None  # text of the last agentMessage item/completed
    error: Any
    deltas: str
    completed: Message
    notifications: list[Message] = field(default_factory=list)


@dataclass
class UserThread:
    thread_id: str
    thread: dict[str, Any]
    first_turn: TurnResult


def _turn_id_of(note: Message) -> str | None:
    params = note.get("params") or {}
    turn = params.get("turn")
    if isinstance(turn, dict) and "id" in turn:
        return str(turn["id"])
    turn_id = params.get("turnId")
    return str(turn_id) if turn_id is not None else None


async def start_turn(c: RawClient, thread_id: str, text: str,
                     **overrides: Any) -> str:
    """turn/start on a thread this client is subscribed to; returns the turn id."""
    result = await c.request("turn/start", {"threadId": thread_id, "input": text_input(text),
                                            **overrides})
    return str(result["turn"]["id"])


async def wait_turn(c: RawClient, thread_id: str, turn_id: str, timeout: float = 30.0,
                    *, since: int = 0) -> TurnResult:
    """Wait for `turn/completed` of `turn_id` and gather what the turn produced."""
    done = await c.wait_for(
        lambda n: n.get("method") == "turn/completed" and _turn_id_of(n) == turn_id,
        timeout, since=since)
    mine = [n for n in c.notifications[since:] if _turn_id_of(n) == turn_id]
    reply: str | None = None
    deltas = []
    for note in mine:
        params = note.get("params") or {}
        if note["method"] == "item/agentMessage/delta":
            deltas.append(str(params.get("delta", "")))
        elif note["method"] == "item/completed":
            item = params.get("item") or {}
            if item.get("type") == "agentMessage":
                reply = item.get("text")
    turn = done["params"]["turn"]
    return TurnResult(thread_id, turn_id, str(turn.get("status")), reply, turn.get("error"),
                      "".join(deltas), done, mine)


async def run_turn(c: RawClient, thread_id: str, text: str, timeout: float = 30.0,
                   **overrides: Any) -> TurnResult:
    since = c.mark()
    turn_id = await start_turn(c, thread_id, text, **overrides)
    return await wait_turn(c, thread_id, turn_id, timeout, since=since)


async def resume_thread(c: RawClient, thread_id: str) -> dict[str, Any]:
    """Subscribe this connection to a thread (excludeTurns: the non-deprecated form)."""
    result: dict[str, Any] = await c.request(
        "thread/resume", {"threadId": thread_id, "excludeTurns": True})
    return result


async def start_user_thread(c: RawClient, cwd: Path | str, text: str,
                            timeout: float = 30.0, *,
                            mcp_servers: tuple[str, ...] = ()) -> UserThread:
    """Do what the TUI does on its first message: a `threadSource:"user"` thread + one turn.

    `mcp_servers`: wait until codex reports these configured MCP servers ready for the
    thread (`mcpServer/startupStatus/updated`) before the turn, so the model's first
    request already offers their tools (codex starts them per thread, in the background).
    """
    since = c.mark()
    result = await c.request("thread/start", {"cwd": str(cwd), "threadSource": "user"})
    thread = result["thread"]
    for name in mcp_servers:
        await wait_mcp_ready(c, name, thread["id"], timeout, since=since)
    turn = await run_turn(c, thread["id"], text, timeout)
    return UserThread(thread["id"], thread, turn)


async def wait_mcp_ready(c: RawClient, server: str, thread_id: str, timeout: float = 30.0,
                         *, since: int = 0) -> Message:
    """The `mcpServer/startupStatus/updated` saying `server` is ready for the thread;
    a `failed` status fails at once with codex's error text."""
    note = await c.wait_for(
        lambda n: n.get("method") == "mcpServer/startupStatus/updated"
        and n["params"].get("name") == server
        and n["params"].get("threadId") in (thread_id, None)
        and n["params"].get("status") in ("ready", "failed"), timeout, since=since)
    if note["params"]["status"] != "ready":
        raise AssertionError(f"MCP server {server} failed to start: {note['params']}")
    return note
