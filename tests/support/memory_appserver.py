"""An in-memory stand-in for the app-server, scripted after the measured protocol.

It serves the server end of an in-memory transport pair (`codexbridge.talk.transport`),
so the real AppServerClient, say/list/read and the schema guard run end to end with no
socket: fast enough for unit tests of *what we send*. It is not a model of codex's
behaviour — the real binary's tests prove that.

    server = MemoryAppServer(threads=[payloads.thread()])
    async with AppServerClient("ws://memory", connector=server.connector) as client:
        ...
    server.received   # every message the client sent, parsed
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from codexbridge.talk import transport as tp

from . import payloads

Message = dict[str, Any]


class _Served:
    """The server's end of an in-memory pair: a task reads what the client sends and
    writes the script's answers back, in order."""

    def __init__(self, server: MemoryAppServer, end: tp.MemoryEnd) -> None:
        self.server = server
        self.end = end
        self.task = asyncio.create_task(self._serve(), name="memory-appserver")

    async def _serve(self) -> None:
        while True:
            try:
                frame = await self.end.recv()
            except tp.TransportClosed:
                return
            msg = json.loads(frame)
            self.server.received.append(msg)
            for reply in self.server.handle(msg):
                await self.push(reply)

    async def push(self, message: Message | str) -> None:
        """Send `message` to the client (a test may push frames of its own)."""
        await self.end.send(message if isinstance(message, str) else json.dumps(message))


class MemoryAppServer:
    """Answers the requests codexbridge makes, with paging on every list method.

    A turn: `turn/start` first streams `turn/started` and a delta *before* its response
    (the buffering case), then sends `server_requests` (method names; params from
    payloads.server_request_params) one by one — each next one once the previous is
    answered — and completes the turn after the last answer.
    """

    def __init__(self, threads: list[Message] | None = None, *,
                 turns: list[Message] | None = None,
                 items: list[Message] | None = None,
                 server_requests: list[str] | None = None,
                 page_size: int = 1) -> None:
        self.threads = {t["id"]: t for t in (threads if threads is not None
                                            else [payloads.thread(), payloads.title_thread()])}
        self.turns = turns if turns is not None else []
        self.items = items if items is not None else []
        self.server_requests = list(server_requests or [])
        self.page_size = page_size
        self.received: list[Message] = []
        self.answers: dict[int, Message] = {}
        self.ws: _Served | None = None
        self._next_request_id = 0
        self._pending: list[str] = []
        self._turn: tuple[str, str] | None = None
        self._outstanding: dict[int, str] = {}

    async def connector(self, _url: str, _headers: Mapping[str, str] | None = None
                        ) -> tp.Transport:
        """A `talk.transport.Connector`: the client's end, seen by the schema guard."""
        client_end, server_end = tp.memory_pair()
        self.ws = _Served(self, server_end)
        return tp.observed(client_end)

    def requests(self, method: str) -> list[Message]:
        return [m for m in self.received if m.get("method") == method and "id" in m]

    # -- request handling -------------------------------------------------------------

    def handle(self, msg: Message) -> list[Message]:
        if "method" not in msg:
            return self._answer(msg)
        if "id" not in msg:
            return []  # `initialized`
        method, params, rid = msg["method"], msg.get("params") or {}, msg["id"]
        handler = getattr(self, "_" + method.replace("/", "_"), None)
        if handler is None:
            return [{"id": rid, "error": {"code": -32600, "message":
                                          f"Invalid request: unknown variant `{method}`"}}]
        out: list[Message] = handler(rid, params)
        return out

    def _page(self, data: list[Any], params: Message) -> Message:
        start = int(params.get("cursor") or 0)
        end = start + self.page_size
        return {"data": data[start:end], "nextCursor": str(end) if end < len(data) else None,
                "backwardsCursor": None}

    def _initialize(self, rid: Any, _params: Message) -> list[Message]:
        return [{"id": rid, "result": payloads.INITIALIZE_RESULT}]

    def _thread_loaded_list(self, rid: Any, params: Message) -> list[Message]:
        page = self._page(list(self.threads), params)
        page.pop("backwardsCursor")
        return [{"id": rid, "result": page}]

    def _thread_read(self, rid: Any, params: Message) -> list[Message]:
        thread = self.threads.get(params.get("threadId", ""))
        if thread is None:
            return [{"id": rid, "error": {"code": -32600,
                                          "message": f"thread not loaded: {params}"}}]
        return [{"id": rid, "result": {"thread": thread, "readState": None}}]

    def _thread_resume(self, rid: Any, params: Message) -> list[Message]:
        thread = self.threads[params["threadId"]]
        return [{"id": rid, "result": payloads.resume_result(thread)},
                {"method": "thread/goal/cleared", "params": {"threadId": thread["id"]}}]

    def _thread_turns_list(self, rid: Any, params: Message) -> list[Message]:
        return [{"id": rid, "result": self._page(self.turns, params)}]

    def _thread_items_list(self, rid: Any, params: Message) -> list[Message]:
        return [{"id": rid, "result": self._page(self.items, params)}]

    def _thread_queue_add(self, rid: Any, params: Message) -> list[Message]:
        """As codex does on an idle thread: the turn starts at once (before the answer),
        its userMessage carrying the clientUserMessageId as `clientId`."""
        thread_id = params["threadId"]
        turn_id = payloads.TURN_2
        self._turn = (thread_id, turn_id)
        self._pending = list(self.server_requests)
        running = payloads.turn(turn_id, status="inProgress", completed_at=None,
                                items_view="notLoaded")
        text = params["input"][0]["text"]
        early = [
            {"method": "thread/status/changed",
             "params": {"threadId": thread_id, "status": {"type": "active", "activeFlags": []}}},
            {"method": "turn/started", "params": {"threadId": thread_id, "turn": running}},
            {"method": "item/started",
             "params": {"threadId": thread_id, "turnId": turn_id, "item": payloads.user_message(
                 text, "item-u2", client_id=params["clientUserMessageId"])}},
            {"method": "item/agentMessage/delta",
             "params": {"threadId": thread_id, "turnId": turn_id, "itemId": "msg_2",
                        "delta": "MOCK REPLY: "}},
        ]
        submission = {"id": "sub-1", "input": params["input"],
                      "clientUserMessageId": params["clientUserMessageId"]}
        return [*early, {"id": rid, "result": {"queuedSubmission": submission}},
                *self._advance()]

    def _turn_start(self, rid: Any, params: Message) -> list[Message]:
        """`--turn-cwd` turns go straight to turn/start (the queue carries no overrides)."""
        thread_id = params["threadId"]
        turn_id = payloads.TURN_2
        self._turn = (thread_id, turn_id)
        self._pending = list(self.server_requests)
        running = payloads.turn(turn_id, status="inProgress", completed_at=None,
                                items_view="notLoaded")
        early = [
            {"method": "turn/started", "params": {"threadId": thread_id, "turn": running}},
            {"method": "item/agentMessage/delta",
             "params": {"threadId": thread_id, "turnId": turn_id, "itemId": "msg_2",
                        "delta": "MOCK REPLY: "}},
        ]
        return [*early, {"id": rid, "result": {"turn": running}}, *self._advance()]

    # -- the scripted turn ---------------------------------------------------------------

    def _advance(self) -> list[Message]:
        assert self._turn is not None
        thread_id, turn_id = self._turn
        if self._pending:
            method = self._pending.pop(0)
            rid = self._next_request_id
            self._next_request_id += 1
            self._outstanding[rid] = method
            params = payloads.server_request_params(thread_id, turn_id).get(
                method, {"threadId": thread_id, "turnId": turn_id})
            return [{"id": rid, "method": method, "params": params}]
        text = "MOCK REPLY: done"
        return [
            {"method": "item/agentMessage/delta",
             "params": {"threadId": thread_id, "turnId": turn_id, "itemId": "msg_2",
                        "delta": "done"}},
            {"method": "item/completed",
             "params": {"threadId": thread_id, "turnId": turn_id, "completedAtMs": 1,
                        "item": payloads.agent_message(text, "msg_2")}},
            {"method": "thread/status/changed",
             "params": {"threadId": thread_id, "status": {"type": "idle"}}},
            {"method": "turn/completed",
             "params": {"threadId": thread_id,
                        "turn": payloads.turn(turn_id, items=[
                            payloads.agent_message(text, "msg_2")])}},
        ]

    def _answer(self, msg: Message) -> list[Message]:
        rid = msg.get("id")
        if not isinstance(rid, int) or rid not in self._outstanding:
            return []
        self._outstanding.pop(rid)
        self.answers[rid] = msg
        assert self._turn is not None
        resolved = {"method": "serverRequest/resolved",
                    "params": {"threadId": self._turn[0], "requestId": rid}}
        return [resolved, *self._advance()]
