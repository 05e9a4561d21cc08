"""An in-memory stand-in for the app-server, scripted after the measured protocol.

It serves the server end of an in-memory transport pair (`memory_pair`, below),
so the real AppServerClient, say/list/read and the schema guard run end to end with no
socket: fast enough for unit tests of *what we send*. It is not a model of codex's
behaviour — the real binary's tests prove that.

    server = MemoryAppServer(threads=[payloads.thread()])
    async with AppServerClient("ws://memory", connector=server.connector) as client:
        ...
    server.received   # every message the client sent, parsed

Several connections at once (one per tool call, as the MCP server opens them), each
hearing the threads it resumed. A thread runs one turn at a time: `thread/queue/add` on a
busy thread waits in line, as in codex's own queue, until the running turn ends or the
sender takes it back (`thread/queue/delete`). `script` says what a message's turn does
(its reply, a failure, a key it waits on until `release(key)`); `record` keeps finished
turns as history; `refuse` answers a method with an error; `unreachable` refuses
connections. `human_steers` / `human_interrupts` / `human_queues` are the human's keys
in the TUI (Enter, Esc, Tab).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from codexbridge.codex import transport as tp
from codexbridge.errors import ConnectError

from . import payloads

Message = dict[str, Any]


class MemoryEnd:
    """One end of an in-memory pair: what one end sends, the other receives."""

    def __init__(self) -> None:
        self._inbox: asyncio.Queue[str | bytes | None] = asyncio.Queue()
        self.peer: MemoryEnd | None = None
        self.closed = False

    async def send(self, text: str) -> None:
        if self.closed or self.peer is None or self.peer.closed:
            raise tp.TransportClosed("the other end closed")
        self.peer._inbox.put_nowait(text)

    def push(self, frame: str | bytes) -> None:
        """Deliver `frame` to this end as if the peer had sent it (fault tests)."""
        self._inbox.put_nowait(frame)

    async def recv(self) -> str | bytes:
        frame = await self._inbox.get()
        if frame is None:
            raise tp.TransportClosed("closed")
        return frame

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._inbox.put_nowait(None)
        if self.peer is not None and not self.peer.closed:
            self.peer.closed = True
            self.peer._inbox.put_nowait(None)


def memory_pair() -> tuple[MemoryEnd, MemoryEnd]:
    a, b = MemoryEnd(), MemoryEnd()
    a.peer, b.peer = b, a
    return a, b


class _Served:
    """The server's end of an in-memory pair: a task reads what the client sends and
    writes the script's answers back, in order."""

    def __init__(self, server: MemoryAppServer, end: MemoryEnd) -> None:
        self.server = server
        self.end = end
        self.threads: set[str] = set()  # resumed here: this connection hears them
        self.task = asyncio.create_task(self._serve(), name="memory-appserver")

    async def _serve(self) -> None:
        while True:
            try:
                frame = await self.end.recv()
            except tp.TransportClosed:
                return
            msg = json.loads(frame)
            self.server.received.append(msg)
            self.server.sender = self
            for reply in self.server.handle(msg):
                await self.push(reply)

    async def push(self, message: Message | str) -> None:
        """Send `message` to the client (a test may push frames of its own)."""
        await self.end.send(message if isinstance(message, str) else json.dumps(message))


@dataclass
class Scripted:
    """What one turn does (`MemoryAppServer.script`, from its message's text)."""
    reply: str = "MOCK REPLY: done"
    error: str | None = None  # the turn fails with this message (the reply is partial)
    hold: str | None = None  # it ends only once `release(hold)` was called


EARLY = len("MOCK REPLY: ")  # the part of a reply sent before turn/start's answer


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
                 page_size: int = 1,
                 script: Callable[[str], Scripted] | None = None,
                 record: bool = False) -> None:
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
        self._submissions = 0
        self.script = script or (lambda _text: Scripted())
        self.record = record
        self.refuse: dict[str, str] = {}  # method → the error message it is answered with
        self.unreachable = False
        self.connections: list[_Served] = []
        self.sender: _Served | None = None  # the connection whose message is handled
        self.running: dict[str, str] = {}  # thread → its running turn
        self.queued: dict[str, list[Message]] = {}  # thread → waiting submissions
        self.turn_log: list[tuple[str, str]] = []  # ("start" | "done", the message text)
        self._texts: dict[str, str] = {}  # turn → its message text
        self._released: set[str] = set()
        self._held: dict[str, tuple[str, str]] = {}  # hold key → (thread, turn)
        self._turn_ids = 0
        self._humans = 0
        self._interrupts: list[asyncio.Task[bool]] = []  # turn/interrupt's, referenced

    async def connector(self, _url: str, _headers: Mapping[str, str] | None = None
                        ) -> tp.Transport:
        """A `talk.transport.Connector`: the client's end, seen by the schema guard."""
        if self.unreachable:
            raise ConnectError("cannot connect to the app-server at ws://memory: refused")
        client_end, server_end = memory_pair()
        self.ws = _Served(self, server_end)
        self.connections.append(self.ws)
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
        if method in self.refuse:
            return [{"id": rid, "error": {"code": -32600, "message": self.refuse[method]}}]
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
        if self.sender is not None:
            self.sender.threads.add(thread["id"])
        return [{"id": rid, "result": payloads.resume_result(thread)},
                {"method": "thread/goal/cleared", "params": {"threadId": thread["id"]}}]

    def _thread_turns_list(self, rid: Any, params: Message) -> list[Message]:
        return [{"id": rid, "result": self._page(self.turns, params)}]

    def _thread_items_list(self, rid: Any, params: Message) -> list[Message]:
        return [{"id": rid, "result": self._page(self.items, params)}]

    def _thread_queue_add(self, rid: Any, params: Message) -> list[Message]:
        """As codex does: on an idle thread the turn starts at once (before the answer),
        its userMessage carrying the clientUserMessageId as `clientId`; on a busy one the
        submission waits in line."""
        thread_id = params["threadId"]
        self._submissions += 1
        submission = {"id": f"sub-{self._submissions}", "input": params["input"],
                      "clientUserMessageId": params["clientUserMessageId"]}
        answer = {"id": rid, "result": {"queuedSubmission": submission}}
        if thread_id in self.running:
            self.queued.setdefault(thread_id, []).append(submission)
            return [answer]
        early, rest = self._start(thread_id, submission)
        return [*early, answer, *rest]

    def _thread_queue_list(self, rid: Any, params: Message) -> list[Message]:
        return [{"id": rid, "result": self._page(self.queued.get(params["threadId"], []),
                                                 params)}]

    def _thread_queue_delete(self, rid: Any, params: Message) -> list[Message]:
        line = self.queued.get(params["threadId"], [])
        kept = [q for q in line if q["id"] != params["queuedSubmissionId"]]
        self.queued[params["threadId"]] = kept
        return [{"id": rid, "result": {"deleted": len(kept) < len(line)}}]

    def _thread_queue_start(self, rid: Any, params: Message) -> list[Message]:
        thread_id = params["threadId"]
        line = self.queued.get(thread_id, [])
        if thread_id in self.running or not line \
                or line[0]["id"] != params["queuedSubmissionId"]:
            return [{"id": rid, "error": {"code": -32600, "message": "not found"}}]
        early, rest = self._start(thread_id, line.pop(0))
        return [*early, {"id": rid, "result": {}}, *rest]

    def _turn_interrupt(self, rid: Any, params: Message) -> list[Message]:
        """As Esc does, heard by every connection that resumed the thread (the running
        turn's follower is on another one)."""
        thread_id = params["threadId"]
        if self.running.get(thread_id) == params["turnId"]:
            self._interrupts.append(asyncio.get_running_loop().create_task(
                self.human_interrupts(thread_id)))
        return [{"id": rid, "result": {}}]

    def _start(self, thread_id: str, submission: Message) -> tuple[list[Message],
                                                                    list[Message]]:
        """A turn for `submission`: what precedes the answer that started it, and what
        follows (server requests, or its end)."""
        turn_id = payloads.TURN_2 if not self._turn_ids else \
            f"0199a5c2-9000-7000-8000-{self._turn_ids + 2:012x}"
        self._turn_ids += 1
        self._turn = (thread_id, turn_id)
        self._pending = list(self.server_requests)
        text = submission["input"][0]["text"]
        self.running[thread_id] = turn_id
        self._texts[turn_id] = text
        self.turn_log.append(("start", text))
        self._set_status(thread_id, {"type": "active", "activeFlags": []})
        running = payloads.turn(turn_id, status="inProgress", completed_at=None,
                                items_view="notLoaded")
        early = [
            {"method": "thread/status/changed",
             "params": {"threadId": thread_id, "status": {"type": "active", "activeFlags": []}}},
            {"method": "turn/started", "params": {"threadId": thread_id, "turn": running}},
            {"method": "item/started",
             "params": {"threadId": thread_id, "turnId": turn_id, "item": payloads.user_message(
                 text, "item-u2", client_id=submission["clientUserMessageId"])}},
            {"method": "item/agentMessage/delta",
             "params": {"threadId": thread_id, "turnId": turn_id, "itemId": "msg_2",
                        "delta": self.script(text).reply[:EARLY]}},
        ]
        return early, self._advance()

    def _turn_start(self, rid: Any, params: Message) -> list[Message]:
        """`--turn-cwd` turns go straight to turn/start (the queue carries no overrides)."""
        thread_id = params["threadId"]
        turn_id = payloads.TURN_2
        self._turn = (thread_id, turn_id)
        self._pending = list(self.server_requests)
        self.running[thread_id] = turn_id
        self._texts[turn_id] = params["input"][0]["text"]
        self.turn_log.append(("start", self._texts[turn_id]))
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
        return self._end(thread_id, turn_id)

    def _end(self, thread_id: str, turn_id: str, *, interrupted: bool = False
             ) -> list[Message]:
        """The turn's end, then the next submission in line — or nothing yet while the
        turn is held (unless the human interrupts it)."""
        script = self.script(self._texts[turn_id])
        if not interrupted and script.hold is not None and script.hold not in self._released:
            self._held[script.hold] = (thread_id, turn_id)
            return []
        reply = script.reply[:EARLY] if interrupted else script.reply
        status, error = ("failed", {"message": script.error}) if script.error \
            else ("completed", None)
        if interrupted:
            status, error = "interrupted", None
        done = payloads.turn(turn_id, status=status, error=error,
                             items=[payloads.agent_message(reply, "msg_2")])
        self.running.pop(thread_id, None)
        self._set_status(thread_id, {"type": "idle"})
        self.turn_log.append(("done", self._texts[turn_id]))
        if self.record:
            self._keep(turn_id, done)
        out: list[Message] = [
            {"method": "item/agentMessage/delta",
             "params": {"threadId": thread_id, "turnId": turn_id, "itemId": "msg_2",
                        "delta": reply[EARLY:]}},
            {"method": "item/completed",
             "params": {"threadId": thread_id, "turnId": turn_id, "completedAtMs": 1,
                        "item": payloads.agent_message(reply, "msg_2")}},
            {"method": "thread/status/changed",
             "params": {"threadId": thread_id, "status": {"type": "idle"}}},
            {"method": "turn/completed", "params": {"threadId": thread_id, "turn": done}},
        ]
        line = self.queued.get(thread_id)
        if line:
            early, rest = self._start(thread_id, line.pop(0))
            out += [*early, *rest]
        return out

    def _set_status(self, thread_id: str, status: Message) -> None:
        if thread_id in self.threads:
            self.threads[thread_id]["status"] = status

    def _keep(self, turn_id: str, done: Message) -> None:
        """A finished turn as thread/turns/list and thread/items/list show it after."""
        self.turns.append({**done, "items": [], "itemsView": "notLoaded"})
        self.items += [payloads.item_entry(turn_id, payloads.user_message(
                           self._texts[turn_id], f"u-{turn_id}")),
                       payloads.item_entry(turn_id, done["items"][0])]

    async def release(self, key: str) -> None:
        """Let the turn held on `key` end (now, or as soon as it starts): its end, and
        whatever starts after it, go to every connection that resumed the thread."""
        self._released.add(key)
        if key not in self._held:
            return
        thread_id, turn_id = self._held.pop(key)
        await self._broadcast(thread_id, self._end(thread_id, turn_id))

    async def _broadcast(self, thread_id: str, frames: list[Message]) -> None:
        """`frames` to every connection that resumed the thread."""
        for served in list(self.connections):
            if thread_id in served.threads and not served.end.closed:
                for frame in frames:
                    await served.push(frame)

    # -- the human at the TUI (codex-app-server.md §16, measured on 0.171) ------------

    async def human_steers(self, thread_id: str, text: str) -> bool:
        """Enter while a turn runs: the human's words become a second user message inside
        the running turn (no clientId of ours). False when no turn runs."""
        turn_id = self.running.get(thread_id)
        if turn_id is None:
            return False
        self._humans += 1
        item = payloads.user_message(text, f"item-h{self._humans}")
        await self._broadcast(thread_id, [
            {"method": "item/started",
             "params": {"threadId": thread_id, "turnId": turn_id, "item": item}},
            {"method": "item/completed",
             "params": {"threadId": thread_id, "turnId": turn_id, "completedAtMs": 1,
                        "item": item}}])
        self.turn_log.append(("steer", text))
        return True

    async def human_interrupts(self, thread_id: str) -> bool:
        """Esc: the running turn ends `interrupted`, whoever started it (the next in line
        then starts, as codex's queue would once resumed). False when no turn runs."""
        turn_id = self.running.get(thread_id)
        if turn_id is None:
            return False
        for key, held in list(self._held.items()):
            if held == (thread_id, turn_id):
                del self._held[key]
        self.turn_log.append(("interrupt", self._texts[turn_id]))
        await self._broadcast(thread_id, self._end(thread_id, turn_id, interrupted=True))
        return True

    async def human_queues(self, thread_id: str, text: str) -> None:
        """Tab (or typing on an idle thread): a turn of the human's own, after the
        running one — or at once."""
        self._humans += 1
        submission = {"id": f"human-{self._humans}",
                      "input": [{"type": "text", "text": text, "text_elements": []}],
                      "clientUserMessageId": f"tui-{self._humans}"}
        if thread_id in self.running:
            self.queued.setdefault(thread_id, []).append(submission)
            return
        early, rest = self._start(thread_id, submission)
        await self._broadcast(thread_id, [*early, *rest])

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
