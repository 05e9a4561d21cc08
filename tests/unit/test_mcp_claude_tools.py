"""Role claude over the SDK's in-memory transport, against a fake app-server.

The fake speaks just enough of codex 0.169.0 for talk.py (loaded/list, read, resume,
turn/start and its notifications, turns/items list) and lets a test hold a turn open
(`HOLD:<key>` in the text) to look at the per-thread line. The real app-server is in
tests/real/test_mcp_codex_real.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import re
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from codexbridge.errors import ConnectError, RpcError
from codexbridge.mcp.artifacts import ArtifactStore
from codexbridge.mcp.runtime import Runtime
from codexbridge.mcp.server import build_server
from codexbridge.mcp.settings import load
from codexbridge.mock.responses import big_text
from codexbridge.protocol.envelopes import Notification, ServerRequest
from codexbridge.talk.endpoint import Endpoint

# -- the fake app-server -------------------------------------------------------------------


def wire_error(message: str) -> RpcError:
    return RpcError.from_wire({"code": -32600, "message": message})


class FakeSub:
    def __init__(self, conn: FakeConn) -> None:
        self.conn = conn
        self.queue: asyncio.Queue[Any] = asyncio.Queue()

    async def get(self) -> Any:
        return await self.queue.get()

    def close(self) -> None:
        self.conn.subs.discard(self)

    def __enter__(self) -> FakeSub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FakeConn:
    """One connection: the talk service's `Rpc` protocol (what AppServerClient offers)."""

    def __init__(self, codex: FakeCodex) -> None:
        self.codex = codex
        self.subs: set[FakeSub] = set()
        self.subscribed: set[str] = set()
        self.server_info = {"userAgent": "codexbridge-mcp/0.169.0 (fake)", "codexHome": "/x"}
        self.answers: list[tuple[Any, Any]] = []

    def subscribe(self) -> FakeSub:
        sub = FakeSub(self)
        self.subs.add(sub)
        return sub

    async def respond(self, request_id: Any, result: Any) -> None:
        self.answers.append((request_id, result))
        self.codex.answered(request_id, result)

    async def respond_error(self, request_id: Any, code: int, message: str) -> None:
        self.answers.append((request_id, {"error": message}))

    def push(self, env: Any) -> None:
        for sub in list(self.subs):
            sub.queue.put_nowait(env)

    async def request(self, method: str, params: dict[str, Any] | None = None, *,
                      timeout: float | None = None) -> Any:
        self.codex.calls.append(method)
        return await self.codex.handle(self, method, params or {})


@dataclasses.dataclass
class FakeThread:
    id: str
    name: str | None = None
    cwd: str = "/work/project"
    thread_source: str | None = "user"
    ephemeral: bool = False
    turns: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    running: str | None = None  # turn id running
    codex: Any = None
    queue: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)

    @property
    def active(self) -> str | None:
        return self.running

    @active.setter
    def active(self, turn_id: str | None) -> None:
        # As codex does: every connection hears of a status change, joined or not.
        self.running = turn_id
        if self.codex is not None:
            self.codex.status_changed(self)

    def wire(self) -> dict[str, Any]:
        status = {"type": "active", "activeFlags": []} if self.active else {"type": "idle"}
        return {"id": self.id, "name": self.name, "cwd": self.cwd, "status": status,
                "ephemeral": self.ephemeral, "threadSource": self.thread_source,
                "preview": "", "updatedAt": 1}


class FakeCodex:
    def __init__(self) -> None:
        self.threads: dict[str, FakeThread] = {}
        self.conns: list[FakeConn] = []
        self.calls: list[str] = []
        self.log: list[str] = []  # "start <text>" / "done <text>" in order
        self.received: list[str] = []  # every text as it arrived (with its envelope)
        self.gates: dict[str, asyncio.Event] = {}
        self.refuse_connect = False
        self.refuse_turn = False
        self._ids = itertools.count(1)
        self._pending: dict[Any, asyncio.Future[Any]] = {}

    def add(self, tid: str, **kw: Any) -> FakeThread:
        self.threads[tid] = FakeThread(tid, codex=self, **kw)
        return self.threads[tid]

    def status_changed(self, thread: FakeThread) -> None:
        note = Notification("thread/status/changed",
                            {"threadId": thread.id, "status": thread.wire()["status"]})
        for conn in list(self.conns):
            conn.push(note)

    def gate(self, key: str) -> asyncio.Event:
        return self.gates.setdefault(key, asyncio.Event())

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Any]:
        if self.refuse_connect:
            raise ConnectError("cannot connect to the app-server at ws://fake: refused")
        conn = FakeConn(self)
        self.conns.append(conn)
        try:
            yield conn
        finally:
            self.conns.remove(conn)

    def answered(self, request_id: Any, result: Any) -> None:
        fut = self._pending.pop(request_id, None)
        if fut and not fut.done():
            fut.set_result(result)

    def broadcast(self, tid: str, env: Any) -> None:
        for conn in list(self.conns):
            if tid in conn.subscribed:
                conn.push(env)

    async def handle(self, conn: FakeConn, method: str, p: dict[str, Any]) -> Any:
        if method == "thread/loaded/list":
            return {"data": list(self.threads), "nextCursor": None}
        thread = self.threads.get(str(p.get("threadId")))
        if thread is None:
            raise wire_error(f"thread not loaded: {p.get('threadId')}")
        if method == "thread/read":
            return {"thread": thread.wire()}
        if method == "thread/resume":
            if not thread.turns and not thread.active:
                raise wire_error(f"no rollout found for thread id {thread.id}")
            conn.subscribed.add(thread.id)
            return {"thread": thread.wire()}
        if method == "thread/queue/add":
            # As codex's queue does: run it at once on an idle thread, else when the
            # running turn ends, in order; the userMessage carries our clientId.
            if self.refuse_turn:
                raise wire_error("Invalid request: turn refused")
            sub_id = f"sub-{next(self._ids)}"
            text = p["input"][0]["text"]
            self.received.append(text)
            if text.startswith("[codexbridge] "):  # the envelope: the tests match the words
                text = text.split("\n\n", 1)[1]
            thread.queue.append((sub_id, text, p["clientUserMessageId"]))
            self.drain(thread)
            return {"queuedSubmission": {"id": sub_id, "input": p["input"],
                                         "clientUserMessageId": p["clientUserMessageId"]}}
        if method == "thread/queue/delete":
            before = len(thread.queue)
            thread.queue = [q for q in thread.queue if q[0] != p["queuedSubmissionId"]]
            return {"deleted": len(thread.queue) < before}
        if method == "thread/turns/list":
            return {"data": [{"id": t["id"], "status": t["status"], "startedAt": 1}
                             for t in thread.turns], "nextCursor": None}
        if method == "thread/items/list":
            return {"data": [{"turnId": t["id"], "item": item} for t in thread.turns
                             for item in t["items"]], "nextCursor": None}
        raise wire_error(f"Invalid request: unknown variant `{method}`")

    def drain(self, thread: FakeThread) -> None:
        if thread.active or not thread.queue:
            return
        _sub, text, client_id = thread.queue.pop(0)
        turn_id = f"turn-{next(self._ids)}"
        thread.active = turn_id
        self.log.append(f"start {text}")
        asyncio.get_running_loop().create_task(self._run(thread, turn_id, text, client_id))

    async def _run(self, thread: FakeThread, turn_id: str, text: str,
                   client_id: str | None = None) -> None:
        tid = thread.id

        def note(method: str, **params: Any) -> None:
            self.broadcast(tid, Notification(method, {"threadId": tid, "turnId": turn_id,
                                                      **params}))

        await asyncio.sleep(0)
        note("item/started", item={"type": "userMessage", "id": f"u-{turn_id}",
                                   "clientId": client_id,
                                   "content": [{"type": "text", "text": text}]})
        status, error, reply = "completed", None, f"MOCK REPLY: {text}"
        held = re.search(r"HOLD:(\w+)", text)
        if held:
            await self.gate(held.group(1)).wait()
        big = re.search(r"BIG:(\d+)", text)
        if big:
            reply = big_text(int(big.group(1)))
        if "RUN:" in text:
            rid = next(self._ids)
            fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._pending[rid] = fut
            self.broadcast(tid, ServerRequest(rid, "item/commandExecution/requestApproval",
                                              {"threadId": tid, "turnId": turn_id,
                                               "command": "touch x", "reason": "why"}))
            answer = await fut
            reply = f"MOCK DONE: {answer['decision']}"
        if "FAIL_TURN" in text:
            status, error, reply = "failed", {"message": "mock model failure"}, "partial"
        for i in range(0, len(reply), 8192):
            note("item/agentMessage/delta", itemId="msg", delta=reply[i:i + 8192])
        note("item/completed", item={"type": "agentMessage", "id": "msg", "text": reply})
        thread.turns.append({"id": turn_id, "status": status, "items": [
            {"type": "userMessage", "content": [{"type": "text", "text": text}]},
            {"type": "agentMessage", "text": reply}]})
        thread.active = None
        self.log.append(f"done {text}")
        self.broadcast(tid, Notification("turn/completed", {
            "threadId": tid, "turn": {"id": turn_id, "status": status, "error": error}}))
        self.drain(thread)


# -- fixtures --------------------------------------------------------------------------------


@pytest.fixture
def codex() -> FakeCodex:
    fake = FakeCodex()
    fake.add("thread-1", name="Main", turns=[{"id": "turn-0", "status": "completed", "items": [
        {"type": "userMessage", "content": [{"type": "text", "text": "first"}]},
        {"type": "agentMessage", "text": "MOCK REPLY: first"}]}])
    return fake


def runtime(tmp_path: Path, codex: FakeCodex, **settings: Any) -> Runtime:
    s = dataclasses.replace(load("claude", {}), **{"queue_wait": 5.0, **settings})
    store = ArtifactStore(tmp_path / "artifacts", "claude", ttl=s.artifact_ttl,
                          max_bytes=s.artifact_store_max)
    return Runtime(settings=s, store=store, connect=codex.connect,
                   endpoint=lambda: Endpoint("ws://fake:1", None, "test"),
                   inbox=lambda: str(tmp_path / "inbox"))


@asynccontextmanager
async def client_for(rt: Runtime) -> AsyncIterator[Client]:
    async with Client(build_server(rt.settings, rt), mode="legacy") as client:
        yield client


async def call(client: Client, tool: str, args: dict[str, Any] | None = None
               ) -> dict[str, Any]:
    result = await client.call_tool(tool, args or {})
    sc = result.structured_content
    assert isinstance(sc, dict)
    assert sc["ok"] is (not result.is_error)
    return sc


def code_of(sc: dict[str, Any]) -> str:
    return str(sc["error"]["code"])


# -- tools ------------------------------------------------------------------------------------


async def test_lists_exactly_the_claude_tools_with_annotations(tmp_path: Path,
                                                               codex: FakeCodex) -> None:
    async with client_for(runtime(tmp_path, codex)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"bridge_status", "bridge_output_read", "codex_threads_list",
                          "codex_thread_read", "codex_message_send", "codex_delivery_status",
                          "bridge_handoff"}
    for name in ("bridge_status", "bridge_output_read", "codex_threads_list",
                 "codex_thread_read", "codex_delivery_status"):
        ann = tools[name].annotations
        assert ann is not None and ann.read_only_hint and ann.idempotent_hint
    send = tools["codex_message_send"].annotations
    assert send is not None and not send.read_only_hint and not send.idempotent_hint
    props = tools["codex_message_send"].input_schema["properties"]
    assert set(props) == {"text", "threadId", "timeoutMs", "approvals", "wait", "replyTo",
                          "conversation"}
    assert props["approvals"]["enum"] == ["tui", "decline"]
    assert set(tools["bridge_output_read"].input_schema["properties"]) == {
        "artifactId", "cursor", "maxBytes"}
    assert not (tools["codex_message_send"].description or " ").startswith(" ")


async def test_threads_list_shows_user_threads_only(tmp_path: Path, codex: FakeCodex) -> None:
    codex.add("title-1", thread_source="thread_title", ephemeral=True)
    codex.add("thread-2", name="Other", cwd="/elsewhere")
    async with client_for(runtime(tmp_path, codex)) as client:
        sc = await call(client, "codex_threads_list")
        assert sc["data"]["total"] == 2
        assert {t["id"] for t in sc["data"]["threads"]} == {"thread-1", "thread-2"}
        assert sc["data"]["url"] == "ws://fake:1"
        one = await call(client, "codex_threads_list", {"limit": 1})
        assert len(one["data"]["threads"]) == 1 and one["data"]["truncated"] is True


async def test_send_returns_the_reply_and_resolves_names(tmp_path: Path,
                                                         codex: FakeCodex) -> None:
    async with client_for(runtime(tmp_path, codex)) as client:
        sc = await call(client, "codex_message_send", {"text": "hello"})
        data = sc["data"]
        assert data["reply"] == "MOCK REPLY: hello" and data["status"] == "completed"
        assert data["threadId"] == "thread-1" and data["artifact"] is None
        assert data["replyBytes"] == len("MOCK REPLY: hello")
        sc = await call(client, "codex_message_send", {"text": "by name", "threadId": "Main"})
        assert sc["data"]["reply"] == "MOCK REPLY: by name"
    assert codex.calls.count("thread/resume") == 2


async def test_thread_selection_errors(tmp_path: Path, codex: FakeCodex) -> None:
    async with client_for(runtime(tmp_path, codex)) as client:
        sc = await call(client, "codex_message_send", {"text": "x", "threadId": "nope"})
        assert code_of(sc) == "NO_LIVE_THREAD" and sc["error"]["retryable"] is True
        codex.add("thread-2", name="Main")
        sc = await call(client, "codex_message_send", {"text": "x"})
        assert code_of(sc) == "AMBIGUOUS_THREAD" and sc["error"]["retryable"] is False
        assert {c["id"] for c in sc["error"]["details"]["candidates"]} == {"thread-1",
                                                                            "thread-2"}
        sc = await call(client, "codex_message_send", {"text": "x", "threadId": "Main"})
        assert code_of(sc) == "AMBIGUOUS_THREAD"
        codex.add("fresh", name="Fresh")  # loaded, but no turn has started yet
        sc = await call(client, "codex_message_send", {"text": "x", "threadId": "fresh"})
        assert code_of(sc) == "NO_ROLLOUT" and "send one message" in sc["error"]["message"]
    assert "start x" not in codex.log


async def test_argument_errors(tmp_path: Path, codex: FakeCodex) -> None:
    async with client_for(runtime(tmp_path, codex, text_max=10)) as client:
        for args, needle in (
                ({"text": "hi", "approvals": "accept"}, "accept is refused over MCP"),
                ({"text": "hi", "approvals": "maybe"}, "expected tui or decline"),
                ({"text": "   "}, "text is empty"),
                ({"text": "x" * 11}, "CODEX_BRIDGE_TEXT_MAX"),
                ({"text": "hi", "timeoutMs": 5}, "timeoutMs"),
                ({"text": "hi", "thread_id": "thread-1"}, "did you mean 'threadId'"),
                ({}, "text")):
            result = await client.call_tool("codex_message_send", args)
            sc = result.structured_content
            assert result.is_error and sc is not None
            assert code_of(sc) == "INVALID_ARGUMENT", (args, sc)
            assert needle in sc["error"]["message"], (args, sc)
            # the text a client shows its model carries the whole error object
            text = result.content[0].text  # type: ignore[union-attr]
            assert text.startswith("INVALID_ARGUMENT: ") and '"retryable": false' in text
        sc = await call(client, "no_such_tool")
        assert code_of(sc) == "UNKNOWN_TOOL"
    assert codex.log == []


async def test_turn_outcomes_map_to_codes(tmp_path: Path, codex: FakeCodex) -> None:
    async with client_for(runtime(tmp_path, codex)) as client:
        sc = await call(client, "codex_message_send", {"text": "FAIL_TURN please"})
        assert code_of(sc) == "TURN_FAILED" and sc["error"]["retryable"] is False
        details = sc["error"]["details"]
        assert details["turnStarted"] is True and details["partialReply"] == "partial"
        assert "mock model failure" in sc["error"]["message"]
        codex.refuse_turn = True
        sc = await call(client, "codex_message_send", {"text": "refused"})
        assert code_of(sc) == "TURN_START_FAILED" and sc["error"]["retryable"] is True
        codex.refuse_turn = False
        codex.refuse_connect = True
        sc = await call(client, "codex_message_send", {"text": "x"})
        assert code_of(sc) == "CODEX_CONNECT_FAILED"
        for tool in ("codex_threads_list", "codex_thread_read"):
            assert code_of(await call(client, tool)) == "CODEX_CONNECT_FAILED"
        status = await call(client, "bridge_status")
        assert status["data"]["appServer"]["reachable"] is False


async def test_decline_answers_approvals_and_records_them(tmp_path: Path,
                                                          codex: FakeCodex) -> None:
    async with client_for(runtime(tmp_path, codex)) as client:
        sc = await call(client, "codex_message_send", {"text": "RUN: touch x",
                                                       "approvals": "decline"})
    assert sc["data"]["reply"] == "MOCK DONE: decline"
    [approval] = sc["data"]["approvals"]
    assert approval["method"] == "item/commandExecution/requestApproval"
    assert approval["outcome"] == "declined"


async def test_turn_timeout_is_not_retryable_and_holds_the_thread(tmp_path: Path,
                                                                  codex: FakeCodex) -> None:
    rt = runtime(tmp_path, codex)
    async with client_for(rt) as client:
        sc = await call(client, "codex_message_send", {"text": "HOLD:a slow",
                                                       "timeoutMs": 1000})
        assert code_of(sc) == "TURN_TIMEOUT" and sc["error"]["retryable"] is False
        assert sc["error"]["details"]["turnStarted"] is True
        assert sc["error"]["details"]["timeoutMs"] == 1000
        # the timed-out turn still runs: the next send waits in codex's queue behind it
        assert codex.threads["thread-1"].active
        nxt = asyncio.create_task(call(client, "codex_message_send", {"text": "next"}))
        while not codex.threads["thread-1"].queue:
            await asyncio.sleep(0.01)
        assert codex.log == ["start HOLD:a slow"]
        codex.gate("a").set()
        sc = await asyncio.wait_for(nxt, 10)
        assert sc["data"]["reply"] == "MOCK REPLY: next"
    assert codex.log == ["start HOLD:a slow", "done HOLD:a slow", "start next", "done next"]


async def test_same_thread_sends_run_one_at_a_time_in_order(tmp_path: Path,
                                                            codex: FakeCodex) -> None:
    rt = runtime(tmp_path, codex)
    async with client_for(rt) as client:
        tasks = []
        for name in ("a", "b", "c", "d"):
            tasks.append(asyncio.create_task(
                call(client, "codex_message_send", {"text": f"HOLD:{name} {name}"})))
            for _ in range(500):  # wait until this send stands in line (running or queued)
                if len(codex.threads["thread-1"].queue) == len(tasks) - 1:
                    break
                await asyncio.sleep(0.01)
        assert len(codex.threads["thread-1"].queue) == 3
        for name in ("d", "c", "b", "a"):  # finish order of the gates must not matter
            codex.gate(name).set()
        results = await asyncio.wait_for(asyncio.gather(*tasks), 20)
    assert [r["data"]["reply"] for r in results] == [f"MOCK REPLY: HOLD:{n} {n}"
                                                      for n in "abcd"]
    assert codex.log == [f"{e} HOLD:{n} {n}" for n in "abcd" for e in ("start", "done")]


async def test_different_threads_run_side_by_side(tmp_path: Path, codex: FakeCodex) -> None:
    codex.add("thread-2", name="Second", turns=[{"id": "t", "status": "completed",
                                                 "items": []}])
    async with client_for(runtime(tmp_path, codex)) as client:
        one = asyncio.create_task(call(client, "codex_message_send",
                                       {"text": "HOLD:x one", "threadId": "thread-1"}))
        two = asyncio.create_task(call(client, "codex_message_send",
                                       {"text": "HOLD:y two", "threadId": "thread-2"}))
        for _ in range(300):
            if len([e for e in codex.log if e.startswith("start")]) == 2:
                break
            await asyncio.sleep(0.01)
        assert sorted(codex.log) == ["start HOLD:x one", "start HOLD:y two"]
        codex.gate("y").set()
        assert (await asyncio.wait_for(two, 10))["ok"] is True
        assert not one.done()
        codex.gate("x").set()
        assert (await asyncio.wait_for(one, 10))["ok"] is True


async def test_queue_timeout_leaves_line_and_later_work_keeps_its_place(
        tmp_path: Path, codex: FakeCodex) -> None:
    rt = runtime(tmp_path, codex, queue_wait=0.3)
    async with client_for(rt) as client:
        head = asyncio.create_task(call(client, "codex_message_send", {"text": "HOLD:h head"}))
        while "start HOLD:h head" not in codex.log:
            await asyncio.sleep(0.01)
        sc = await call(client, "codex_message_send", {"text": "impatient"})
        assert code_of(sc) == "THREAD_QUEUE_TIMEOUT" and sc["error"]["retryable"] is True
        assert sc["error"]["details"]["turnStarted"] is False
        assert codex.threads["thread-1"].queue == []  # taken back out of codex's queue
        codex.gate("h").set()
        await head
        sc = await call(client, "codex_message_send", {"text": "later"})
        assert sc["ok"]
    assert "start impatient" not in codex.log


async def test_a_thread_busy_in_the_tui_is_waited_for(tmp_path: Path, codex: FakeCodex) -> None:
    codex.threads["thread-1"].active = "human-turn"  # the human is mid-turn in the TUI
    async with client_for(runtime(tmp_path, codex, queue_wait=0.3)) as client:
        sc = await call(client, "codex_message_send", {"text": "x"})
        assert code_of(sc) == "THREAD_QUEUE_TIMEOUT" and sc["error"]["details"]["busy"]
        codex.threads["thread-1"].active = None
        assert (await call(client, "codex_message_send", {"text": "x"}))["ok"]


async def test_large_reply_becomes_an_artifact_and_pages_back_exactly(
        tmp_path: Path, codex: FakeCodex) -> None:
    async with client_for(runtime(tmp_path, codex)) as client:
        small = await call(client, "codex_message_send", {"text": "BIG:65536"})
        assert small["data"]["artifact"] is None and len(small["data"]["reply"]) == 65536
        sc = await call(client, "codex_message_send", {"text": "BIG:200000"})
        data = sc["data"]
        assert data["reply"] is None and data["replyBytes"] == 200000
        art = data["artifact"]
        assert art["totalBytes"] == 200000 and data["replyPreview"] == big_text(2000)
        parts, cursor, pages = [], None, 0
        while True:
            args: dict[str, Any] = {"artifactId": art["artifactId"], "maxBytes": 50000}
            if cursor:
                args["cursor"] = cursor
            page = (await call(client, "bridge_output_read", args))["data"]
            parts.append(page["text"])
            pages += 1
            cursor = page["nextCursor"]
            if cursor is None:
                assert page["eof"] is True
                break
        assert "".join(parts) == big_text(200000) and pages == 4
        # default page size, and the inline cap on maxBytes
        first = (await call(client, "bridge_output_read", {"artifactId": art["artifactId"]}))
        assert first["data"]["bytes"] == 16384
        huge = await call(client, "bridge_output_read", {"artifactId": art["artifactId"],
                                                         "maxBytes": 10_000_000})
        assert huge["data"]["bytes"] == 65536


async def test_output_read_errors(tmp_path: Path, codex: FakeCodex) -> None:
    rt = runtime(tmp_path, codex)
    async with client_for(rt) as client:
        art = (await call(client, "codex_message_send", {"text": "BIG:70000"}))["data"]["artifact"]
        other = rt.store.create("another artifact " * 10, kind="k")
        sc = await call(client, "bridge_output_read", {"artifactId": "art_" + "x" * 24})
        assert code_of(sc) == "ARTIFACT_NOT_FOUND"
        page = await call(client, "bridge_output_read", {"artifactId": other.id,
                                                         "maxBytes": 64})
        sc = await call(client, "bridge_output_read", {"artifactId": art["artifactId"],
                                                       "cursor": page["data"]["nextCursor"]})
        assert code_of(sc) == "INVALID_CURSOR"
        sc = await call(client, "bridge_output_read", {"artifactId": art["artifactId"],
                                                       "cursor": "c1.AAAAAAAAAAAAAAAA"})
        assert code_of(sc) == "INVALID_CURSOR"
    codex_rt = Runtime(settings=dataclasses.replace(rt.settings, role="codex"),
                       store=ArtifactStore(tmp_path / "artifacts", "codex", ttl=60,
                                           max_bytes=1 << 20))
    async with Client(build_server(codex_rt.settings, codex_rt), mode="legacy") as client:
        sc = await call(client, "bridge_output_read", {"artifactId": art["artifactId"]})
        assert code_of(sc) == "ARTIFACT_NOT_FOUND"  # owned by the claude role


async def test_capture_cap_and_unusable_store(tmp_path: Path, codex: FakeCodex) -> None:
    rt = runtime(tmp_path, codex, capture_max=100_000, artifact_store_max=100_000)
    async with client_for(rt) as client:
        sc = await call(client, "codex_message_send", {"text": "BIG:150000"})
        assert sc["data"]["truncated"] is True and sc["data"]["replyBytes"] == 150000
        assert sc["data"]["artifact"]["totalBytes"] == 100_000
        assert [w["code"] for w in sc["warnings"]] == ["OUTPUT_TRUNCATED"]
        shutil.rmtree(rt.store.dir)
        rt.store.dir.write_text("in the way")  # the store is unusable (even for root)
        sc = await call(client, "codex_message_send", {"text": "BIG:70000"})
        assert sc["ok"] and sc["data"]["artifact"] is None
        assert len(sc["data"]["reply"]) == rt.settings.inline_max
        assert "ARTIFACT_STORE_UNAVAILABLE" in [w["code"] for w in sc["warnings"]]


async def test_thread_read_inline_and_as_artifact(tmp_path: Path, codex: FakeCodex) -> None:
    async with client_for(runtime(tmp_path, codex, inline_max=4096,
                                  capture_max=1 << 20)) as client:
        sc = await call(client, "codex_thread_read", {"threadId": "Main"})
        turns = sc["data"]["turns"]
        assert [t["text"] for t in turns] == ["› first\n• MOCK REPLY: first"]
        await call(client, "codex_message_send", {"text": "BIG:5000"})
        sc = await call(client, "codex_thread_read")
        assert sc["data"]["artifact"] is not None and "text" not in sc["data"]["turns"][0]
        page = await call(client, "bridge_output_read",
                          {"artifactId": sc["data"]["artifact"]["artifactId"],
                           "maxBytes": 4096})
        assert page["data"]["text"].startswith("[turn turn-0 · completed]\n› first")
        sc = await call(client, "codex_thread_read", {"limit": 1})
        assert sc["data"]["totalTurns"] == 2 and sc["data"]["truncated"] is True


async def test_bridge_status(tmp_path: Path, codex: FakeCodex) -> None:
    async with client_for(runtime(tmp_path, codex)) as client:
        sc = await call(client, "bridge_status")
    data = sc["data"]
    assert data["role"] == "claude"
    assert data["appServer"]["reachable"] is True and data["appServer"]["url"] == "ws://fake:1"
    assert data["versions"]["codex"] == "0.169.0" and data["versions"]["mcp"]
    assert data["settings"]["approvals"] == "tui" and data["settings"]["inline_max"] == 65536
    assert "codex_message_send" in data["tools"] and "TURN_TIMEOUT" in data["errorCodes"]
    assert data["mailboxes"]["inboxDir"] == str(tmp_path / "inbox")


async def test_cancelled_call_after_turn_start_keeps_the_thread(tmp_path: Path,
                                                                codex: FakeCodex) -> None:
    """A caller that goes away mid-turn (MCP cancel, client exit) must not free the thread
    while the turn still runs."""
    rt = runtime(tmp_path, codex)
    from codexbridge.mcp.codex_tools import send

    task = asyncio.create_task(send(rt, "HOLD:c cancelled", None, None, None))
    while "start HOLD:c cancelled" not in codex.log:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert codex.threads["thread-1"].active  # the turn runs on without its caller
    later = asyncio.create_task(send(rt, "after", None, None, None))
    while not codex.threads["thread-1"].queue:
        await asyncio.sleep(0.01)
    assert "start after" not in codex.log
    codex.gate("c").set()
    out = await asyncio.wait_for(later, 10)
    assert out.data["reply"] == "MOCK REPLY: after"


async def test_a_blocking_send_carries_the_envelope_and_spends_a_hop(
        tmp_path: Path, codex: FakeCodex) -> None:
    async with client_for(runtime(tmp_path, codex)) as client:
        sc = await call(client, "codex_message_send", {"text": "review it"})
        assert sc["ok"]
        header, words = codex.received[-1].split("\n\n", 1)
        assert words == "review it"
        assert header.startswith("[codexbridge] from Claude Code — a peer AI agent")
        assert "hop 1/4" in header and "the asking Claude waits" in header
        conv = re.search(r"(conv_[0-9a-f]+)", header).group(1)  # type: ignore[union-attr]
        for _ in range(3):
            assert (await call(client, "codex_message_send", {"text": "again",
                                                              "conversation": conv}))["ok"]
        sc = await call(client, "codex_message_send", {"text": "fifth",
                                                       "conversation": conv})
        assert code_of(sc) == "HOP_LIMIT" and sc["error"]["retryable"] is False
    assert "start fifth" not in codex.log
