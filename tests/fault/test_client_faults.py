"""Faults the real app-server will not produce on demand, injected by a fake on loopback.

The fake speaks just enough of the protocol to get the client into the state under test
(handshake, a resume, a turn) and then misbehaves: garbage frames, a dropped socket, no
answer, a flood, an unknown server request, error answers. Everything a user can see
is proven against the real codex binary in tests/real/; this file covers only what
that binary cannot be made to do. Every message the client sends is schema-checked.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest
from websockets.asyncio.server import Server, ServerConnection, serve, unix_serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from codexbridge.codex.client import AppServerClient, Subscription
from codexbridge.codex.protocol.enums import ApprovalPolicy
from codexbridge.codex.protocol.envelopes import Invalid, Notification, ServerRequest
from codexbridge.codex.turn import say
from codexbridge.errors import (
    BridgeError,
    ConnectError,
    ConnectionLostError,
    InternalError,
    NoRolloutError,
    OutputClosedError,
    RequestTimeoutError,
    RpcError,
    ServerOverloadedError,
    ThreadNotLoadedError,
)
from tests.support import payloads
from tests.support.schema_guard import schema_guard_fixture  # noqa: F401 - fixture

pytestmark = [pytest.mark.usefixtures("schema_guard"), pytest.mark.timeout(30)]

Message = dict[str, Any]
T, U = payloads.USER_THREAD, payloads.TURN_2


class Conn:
    """One accepted client connection, from the fake server's side."""

    def __init__(self, ws: ServerConnection) -> None:
        self.ws = ws
        self.received: list[Message] = []

    async def recv(self) -> Message:
        msg: Message = json.loads(await self.ws.recv())
        self.received.append(msg)
        return msg

    async def send(self, msg: Message | str | bytes) -> None:
        """A dict as one JSON text frame; a str or bytes (a binary frame) as given."""
        await self.ws.send(msg if isinstance(msg, (str, bytes)) else json.dumps(msg))

    async def handshake(self) -> None:
        init = await self.recv()
        assert init["method"] == "initialize"
        await self.send({"id": init["id"], "result": payloads.INITIALIZE_RESULT})
        assert (await self.recv()) == {"method": "initialized"}

    async def expect(self, method: str) -> Message:
        msg = await self.recv()
        assert msg.get("method") == method, msg
        return msg

    async def answer(self, request: Message, result: Any) -> None:
        await self.send({"id": request["id"], "result": result})

    async def join_and_start_turn(self) -> Message:
        """Answer thread/resume and thread/queue/add the way codex does on an idle thread
        (the turn starts at once; its userMessage carries our clientId); returns the add."""
        resume = await self.expect("thread/resume")
        await self.answer(resume, payloads.resume_result(payloads.thread()))
        add = await self.expect("thread/queue/add")
        running = payloads.turn(U, status="inProgress", completed_at=None,
                                items_view="notLoaded")
        await self.send({"method": "turn/started", "params": {"threadId": T, "turn": running}})
        await self.send({"method": "item/started", "params": {
            "threadId": T, "turnId": U, "item": payloads.user_message(
                add["params"]["input"][0]["text"],
                client_id=add["params"]["clientUserMessageId"])}})
        await self.answer(add, {"queuedSubmission": {
            "id": "sub-1", "input": add["params"]["input"],
            "clientUserMessageId": add["params"]["clientUserMessageId"]}})
        return add

    async def complete_turn(self, text: str = "MOCK REPLY: done") -> None:
        await self.send({"method": "item/completed", "params": {
            "threadId": T, "turnId": U, "item": payloads.agent_message(text, "msg_2")}})
        await self.send({"method": "turn/completed", "params": {
            "threadId": T, "turn": payloads.turn(U, items=[payloads.agent_message(text)])}})

    def abort(self) -> None:
        """Drop the TCP connection without a close frame (a crash, a cable pulled)."""
        transport = self.ws.transport
        assert transport is not None
        transport.abort()


Script = Callable[[Conn], Awaitable[None]]


class FakeAppServer:
    """`async with FakeAppServer(script) as fake:` — `fake.url`; `script` runs per
    connection after the handshake; `fake.conns` keeps every connection."""

    def __init__(self, script: Script, *, unix_path: Path | None = None,
                 handshake: bool = True) -> None:
        self.script = script
        self.unix_path = unix_path
        self.do_handshake = handshake
        self.conns: list[Conn] = []
        self.headers: list[Headers] = []
        self.url = ""
        self._server: Server | None = None

    async def _handler(self, ws: ServerConnection) -> None:
        conn = Conn(ws)
        self.conns.append(conn)
        self.headers.append(ws.request.headers if ws.request else Headers())
        if self.do_handshake:
            await conn.handshake()
        await self.script(conn)

    async def __aenter__(self) -> FakeAppServer:
        if self.unix_path is not None:
            self._server = await unix_serve(self._handler, str(self.unix_path),
                                            compression=None)
            self.url = f"unix://{self.unix_path}"
        else:
            self._server = await serve(self._handler, "127.0.0.1", 0, compression=None)
            port = self._server.sockets[0].getsockname()[1]
            self.url = f"ws://127.0.0.1:{port}"
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()


async def _hold(conn: Conn) -> None:
    """Keep the connection open until the client closes it."""
    await conn.ws.wait_closed()


async def _answer_everything(conn: Conn) -> None:
    """Answer every request with `{"echo": method}` until the client leaves."""
    async for raw in conn.ws:
        msg = json.loads(raw)
        conn.received.append(msg)
        if "id" in msg and "method" in msg:
            await conn.send({"id": msg["id"], "result": {"echo": msg["method"]}})


# -- garbage on the wire ----------------------------------------------------------------


async def test_garbage_frames_are_reported_not_fatal() -> None:
    async def script(conn: Conn) -> None:
        await conn.send("this is not json")
        await conn.send("[1, 2, 3]")
        await conn.send('{"id": 1}')  # neither result nor error
        await conn.send(json.dumps({"method": "a", "params": {}}) + "\n"
                        + json.dumps({"method": "b", "params": {"threadId": T}}))
        await conn.send(b'{"method": "binary-frame"}')
        await _answer_everything(conn)

    invalid: list[Invalid] = []
    async with FakeAppServer(script) as fake, \
            AppServerClient(fake.url, on_invalid=invalid.append) as client:
        sub = client.subscribe()
        assert await client.request("thread/loaded/list", {}) == {"echo": "thread/loaded/list"}
        events = [await asyncio.wait_for(sub.get(), 2) for _ in range(3)]
    assert [(type(e), e.method) for e in events if e is not None] == [
        (Notification, "a"), (Notification, "b"), (Notification, "binary-frame")]
    assert [i.reason for i in invalid] == [
        "invalid JSON: Expecting value: line 1 column 1 (char 0)",
        "not a JSON object", "response without result or error"]
    assert invalid[0].raw == "this is not json"


async def test_invalid_frames_are_logged_by_default(caplog: pytest.LogCaptureFixture
                                                     ) -> None:
    # Logged as a warning: the CLI shows it on stderr as `codexbridge: ignored …`.
    async def script(conn: Conn) -> None:
        await conn.send("\x00garbage")
        await _answer_everything(conn)

    async with FakeAppServer(script) as fake, AppServerClient(fake.url) as client:
        await client.request("thread/loaded/list", {})
    assert "ignored a malformed frame from the app-server (invalid JSON" in caplog.text


# -- the socket goes away ---------------------------------------------------------------


@pytest.mark.parametrize("how", ["abort", "close"])
async def test_drop_mid_request_fails_the_waiter_promptly(how: str) -> None:
    async def script(conn: Conn) -> None:
        await conn.expect("thread/read")
        if how == "abort":
            conn.abort()
        else:
            await conn.ws.close(1011, "server going away")

    async with FakeAppServer(script) as fake, AppServerClient(fake.url) as client:
        sub = client.subscribe()
        # Lost, not timed out: the waiter failed when the socket went, not after 3600 s.
        with pytest.raises(ConnectionLostError, match="lost while waiting"):
            await client.request("thread/read", {"threadId": T}, timeout=3600)
        assert await asyncio.wait_for(sub.get(), 1) is None
        # later requests and subscribers fail at once, not after a timeout
        with pytest.raises(ConnectionLostError, match="is closed"):
            await client.request("thread/read", {"threadId": T}, timeout=10)
        late = client.subscribe()
        assert await asyncio.wait_for(late.get(), 1) is None


async def test_a_bug_in_dispatch_is_reported_as_a_bug_not_a_lost_connection(
        monkeypatch: pytest.MonkeyPatch) -> None:
    async def script(conn: Conn) -> None:
        request = await conn.expect("thread/read")
        await conn.answer(request, {"thread": payloads.thread()})
        await conn.ws.wait_closed()

    real, broken = AppServerClient._dispatch, asyncio.Event()

    def dispatch(self: AppServerClient, env: Any) -> None:
        if broken.is_set():
            raise KeyError("a bug in dispatch")
        real(self, env)

    monkeypatch.setattr(AppServerClient, "_dispatch", dispatch)
    async with FakeAppServer(script) as fake, AppServerClient(fake.url) as client:
        broken.set()  # after the handshake: the next frame finds the bug
        with pytest.raises(InternalError, match="a bug in dispatch") as caught:
            await client.request("thread/read", {"threadId": T}, timeout=3600)
    assert not isinstance(caught.value, ConnectionLostError)
    assert isinstance(caught.value.__cause__, KeyError)


async def test_several_waiters_all_fail_when_the_socket_closes() -> None:
    async def script(conn: Conn) -> None:
        for _ in range(3):
            await conn.recv()
        conn.abort()

    async with FakeAppServer(script) as fake, AppServerClient(fake.url) as client:
        results = await asyncio.gather(
            *(client.request("thread/read", {"threadId": T}, timeout=10) for _ in range(3)),
            return_exceptions=True)
    assert all(isinstance(r, ConnectionLostError) for r in results), results


async def test_request_without_answer_times_out() -> None:
    async with FakeAppServer(_hold) as fake, AppServerClient(fake.url) as client:
        with pytest.raises(RequestTimeoutError, match="thread/read got no answer"):
            await client.request("thread/read", {"threadId": T}, timeout=0.2)
        assert client._waiters == {}  # the abandoned waiter is not leaked


async def test_initialize_without_answer_times_out() -> None:
    async def script(conn: Conn) -> None:
        await conn.ws.wait_closed()

    async with FakeAppServer(script, handshake=False) as fake:
        client = AppServerClient(fake.url, request_timeout=0.2)
        with pytest.raises(RequestTimeoutError, match="initialize"):
            await client.connect()
        await client.close()


async def test_connect_to_a_closed_port() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConnectError, match="is it running") as info:
        async with AppServerClient(f"ws://127.0.0.1:{port}"):
            pass
    assert "(codex's own daemon, or `codexbridge serve`)" in info.value.message


async def test_connect_refused_at_the_http_handshake() -> None:
    # e.g. an Origin or a token check failing: a 403, not a WebSocket
    def reject(_conn: ServerConnection, _req: Request) -> Response:
        return Response(403, "Forbidden", Headers(), b"forbidden\n")

    server = await serve(_hold, "127.0.0.1", 0, process_request=reject)  # type: ignore[arg-type]
    try:
        port = server.sockets[0].getsockname()[1]
        with pytest.raises(ConnectError, match="403"):
            async with AppServerClient(f"ws://127.0.0.1:{port}"):
                pass
    finally:
        server.close()
        await server.wait_closed()


async def test_bad_urls() -> None:
    for url in ("unix://", "http://127.0.0.1:1", "nonsense"):
        with pytest.raises(ConnectError):
            async with AppServerClient(url):
                pass


async def test_bearer_token_is_sent() -> None:
    async with FakeAppServer(_answer_everything) as fake, \
            AppServerClient(fake.url, token="s3cret") as client:
        await client.request("thread/loaded/list", {})
    assert fake.headers[0]["Authorization"] == "Bearer s3cret"
    assert "Origin" not in fake.headers[0]  # codex answers 403 to any Origin


async def test_unix_socket_url(tmp_path: Path) -> None:
    sock = tmp_path / "app.sock"
    async with FakeAppServer(_answer_everything, unix_path=sock) as fake, \
            AppServerClient(fake.url) as client:
        assert client.server_info == payloads.INITIALIZE_RESULT
        assert await client.request("thread/read", {"threadId": T}) == {"echo": "thread/read"}
    # compression is off: codex's unix listener drops clients offering permessage-deflate
    assert "Sec-WebSocket-Extensions" not in fake.headers[0]


# -- during a turn ------------------------------------------------------------------------


async def test_say_when_the_socket_drops_mid_turn() -> None:
    streamed = asyncio.Event()

    async def script(conn: Conn) -> None:
        await conn.join_and_start_turn()
        await conn.send({"method": "item/agentMessage/delta", "params": {
            "threadId": T, "turnId": U, "itemId": "msg_2", "delta": "MOCK "}})
        await streamed.wait()  # the delta reached say (an abort drops unsent frames)
        conn.abort()

    deltas: list[str] = []

    def sink(chunk: str) -> None:
        deltas.append(chunk)
        streamed.set()

    async with FakeAppServer(script) as fake, AppServerClient(fake.url) as client:
        # Raised, not a TIMED_OUT result: say ended when the socket went, not after 3600 s.
        with pytest.raises(ConnectionLostError, match="lost during the turn"):
            await say(client, T, "hello", on_delta=sink, timeout=3600)
    assert deltas == ["MOCK "]


async def test_say_when_the_socket_drops_before_turn_start_answers() -> None:
    async def script(conn: Conn) -> None:
        resume = await conn.expect("thread/resume")
        await conn.answer(resume, payloads.resume_result(payloads.thread()))
        await conn.expect("turn/start")
        conn.abort()

    async with FakeAppServer(script) as fake, AppServerClient(fake.url) as client:
        with pytest.raises(ConnectionLostError):
            await say(client, T, "hello", timeout=20)


async def test_unknown_server_request_during_a_turn_gets_a_json_rpc_error() -> None:
    answers: list[Message] = []

    async def script(conn: Conn) -> None:
        await conn.join_and_start_turn()
        await conn.send({"id": 0, "method": "item/somethingNew/requestApproval",
                         "params": {"threadId": T, "turnId": U, "itemId": "x"}})
        answers.append(await conn.recv())
        await conn.complete_turn()
        await _hold(conn)

    lines: list[str] = []
    async with FakeAppServer(script) as fake, AppServerClient(fake.url) as client:
        result = await say(client, T, "hello", on_approval=lines.append, timeout=10)
    assert result.status == "completed" and result.reply == "MOCK REPLY: done"
    (answer,) = answers
    assert answer["id"] == 0 and "result" not in answer
    assert answer["error"]["code"] == -32601
    assert "item/somethingNew/requestApproval" in answer["error"]["message"]


async def test_unknown_server_request_from_another_thread_is_answered_too() -> None:
    # Never silence: even a request the turn does not own gets an answer.
    answers: list[Message] = []

    async def script(conn: Conn) -> None:
        await conn.join_and_start_turn()
        await conn.send({"id": 5, "method": "brand/new", "params": {"threadId": "other"}})
        answers.append(await conn.recv())
        await conn.complete_turn()
        await _hold(conn)

    async with FakeAppServer(script) as fake, AppServerClient(fake.url) as client:
        await say(client, T, "hello", timeout=10)
    assert answers[0]["id"] == 5 and answers[0]["error"]["code"] == -32601


async def test_slow_consumer_does_not_block_the_reader() -> None:
    # codex disconnects clients whose outbound queue fills (docs/protocol-notes.md,
    # "Backpressure"): the reader must
    # keep draining the socket even while a subscriber reads nothing at all.
    flood = 5000

    async def script(conn: Conn) -> None:
        req = await conn.expect("thread/read")
        for i in range(flood):  # all of it queued ahead of the answer
            await conn.send({"method": "item/agentMessage/delta", "params": {
                "threadId": T, "turnId": U, "itemId": "m", "delta": f"{i:05d}"}})
        await conn.answer(req, {"after": "flood"})
        await _answer_everything(conn)

    async with FakeAppServer(script) as fake, AppServerClient(fake.url) as client:
        stalled = client.subscribe()  # never read until the end
        # Answered although nobody reads the subscription: a blocked reader would never
        # get to the answer (how fast it comes is bench/bench_flood.py's to measure).
        assert await client.request("thread/read", {"threadId": T}, timeout=3600) == \
            {"after": "flood"}
        assert stalled.qsize() == flood  # in order: every delta before the answer
        # and the next request gets through the backlog too
        assert await client.request("thread/loaded/list", {}, timeout=3600) == \
            {"echo": "thread/loaded/list"}
        first = await stalled.get()
    assert isinstance(first, Notification) and first.params["delta"] == "00000"


# -- error answers map to error classes ----------------------------------------------------


ERRORS: list[tuple[Message, type[RpcError]]] = [
    ({"code": -32600, "message": f"no rollout found for thread id {T}"}, NoRolloutError),
    ({"code": -32600, "message": f"thread not loaded: {T}"}, ThreadNotLoadedError),
    ({"code": -32001, "message": "Server overloaded; retry later."}, ServerOverloadedError),
    ({"code": -32600, "message": "Invalid request: missing field `input`"}, RpcError),
    ({"code": -32600, "message": "Not initialized", "data": {"x": 1}}, RpcError),
]


@pytest.mark.parametrize("error, cls", ERRORS)
async def test_error_answers_map_to_error_classes(error: Message, cls: type[RpcError]) -> None:
    async def script(conn: Conn) -> None:
        async for raw in conn.ws:
            msg = json.loads(raw)
            if "id" in msg:
                await conn.send({"id": msg["id"], "error": error})

    async with FakeAppServer(script) as fake, AppServerClient(fake.url) as client:
        with pytest.raises(RpcError) as info:
            await client.request("thread/read", {"threadId": T})
    assert type(info.value) is cls
    assert info.value.rpc_code == error["code"] and info.value.message == error["message"]
    assert info.value.data == error.get("data")


async def test_no_rollout_on_join_tells_the_person_what_to_do() -> None:
    async def script(conn: Conn) -> None:
        resume = await conn.expect("thread/resume")
        await conn.send({"id": resume["id"], "error": {
            "code": -32600, "message": f"no rollout found for thread id {T}"}})
        await _hold(conn)

    async with FakeAppServer(script) as fake, AppServerClient(fake.url) as client:
        with pytest.raises(NoRolloutError, match="send one message in the Codex TUI first"
                           ) as info:
            await say(client, T, "hello", timeout=5)
    assert info.value.exit_code == 3 and "no rollout found" in info.value.message


async def test_malformed_error_objects_still_fail_the_request() -> None:
    async def script(conn: Conn) -> None:
        req = await conn.expect("thread/read")
        await conn.send({"id": req["id"], "error": "just a string"})
        req = await conn.expect("thread/read")
        await conn.send({"id": req["id"], "error": {"message": 5}})
        await _hold(conn)

    async with FakeAppServer(script) as fake, AppServerClient(fake.url) as client:
        with pytest.raises(RpcError, match="just a string"):
            await client.request("thread/read", {"threadId": T})
        with pytest.raises(RpcError) as info:
            await client.request("thread/read", {"threadId": T})
        assert info.value.rpc_code == -32603


async def test_answers_to_unknown_ids_are_ignored() -> None:
    async def script(conn: Conn) -> None:
        req = await conn.expect("thread/read")
        await conn.send({"id": 999, "result": {"stray": True}})
        await conn.send({"id": req["id"], "result": {"ok": True}})
        await conn.send({"id": req["id"], "result": {"duplicate": True}})
        await _answer_everything(conn)

    async with FakeAppServer(script) as fake, AppServerClient(fake.url) as client:
        assert await client.request("thread/read", {"threadId": T}) == {"ok": True}
        assert await client.request("thread/loaded/list", {}) == {"echo": "thread/loaded/list"}


async def test_server_requests_reach_every_subscriber() -> None:
    async def script(conn: Conn) -> None:
        await conn.send({"id": 0, "method": "item/commandExecution/requestApproval",
                         "params": payloads.server_request_params(T, U)[
                             "item/commandExecution/requestApproval"]})
        await _answer_everything(conn)

    async with FakeAppServer(script) as fake, AppServerClient(fake.url) as client:
        a, b = client.subscribe(), client.subscribe()
        got = [await asyncio.wait_for(s.get(), 2) for s in (a, b)]
        b.close()
        await client.respond(0, {"decision": "decline"})
        await client.request("thread/loaded/list", {})
    assert all(isinstance(g, ServerRequest) and g.id == 0 for g in got)
    assert b not in client._subscribers
    assert {"id": 0, "result": {"decision": "decline"}} in fake.conns[0].received


async def test_say_when_the_socket_drops_right_after_an_approval_request() -> None:
    # The answer to the approval cannot be sent any more; say must still end at once
    # with ConnectionLostError, not wait out its turn timeout.
    watch: list[Subscription] = []

    async def script(conn: Conn) -> None:
        await conn.join_and_start_turn()
        await conn.send({"id": 0, "method": "item/commandExecution/requestApproval",
                         "params": payloads.server_request_params(T, U)[
                             "item/commandExecution/requestApproval"]})
        # The client has the request (every subscriber gets it, say's pump too): only
        # now drop the connection, which would discard a frame not yet sent.
        while (seen := await watch[0].get()) is not None \
                and not isinstance(seen, ServerRequest):
            pass
        conn.abort()

    async with FakeAppServer(script) as fake, AppServerClient(fake.url) as client:
        watch.append(client.subscribe())
        # Raised, not a TIMED_OUT result: say did not wait out its 3600 s.
        with pytest.raises(ConnectionLostError):
            await say(client, T, "hello", approvals=ApprovalPolicy.DECLINE, timeout=3600)


@pytest.mark.parametrize("fault", [BrokenPipeError(32, "Broken pipe"),
                                   ZeroDivisionError("a bug in a sink")])
async def test_say_ends_at_once_with_the_cause_when_its_pump_dies(
        fault: Exception) -> None:
    # The delta sink raises (stderr closed under `talk say`): the pump that feeds the
    # turn dies. say must end now, naming the cause, not wait out its turn timeout with
    # the cause lost. The wait_for bound is only a guard far below say's own timeout.
    async def script(conn: Conn) -> None:
        await conn.join_and_start_turn()
        await conn.send({"method": "item/agentMessage/delta", "params": {
            "threadId": T, "turnId": U, "itemId": "msg_2", "delta": "MOCK "}})
        await _answer_everything(conn)  # the connection stays up: only the pump dies

    def sink(_chunk: str) -> None:
        raise fault

    async with FakeAppServer(script) as fake, AppServerClient(fake.url) as client:
        with pytest.raises(BridgeError) as caught:
            await asyncio.wait_for(say(client, T, "hello", on_delta=sink, timeout=3600), 20)
    assert type(fault).__name__ in str(caught.value)
    assert caught.value.__cause__ is fault
    if isinstance(fault, BrokenPipeError):
        # the reader went away: not a bug, and the turn may still run (exit 74)
        assert isinstance(caught.value, OutputClosedError) and caught.value.exit_code == 74
        assert "output" in str(caught.value) and "Broken pipe" in str(caught.value)
    else:
        assert isinstance(caught.value, InternalError) and caught.value.exit_code == 70


async def test_failed_handshake_closes_the_socket() -> None:
    closed = asyncio.Event()

    async def script(conn: Conn) -> None:
        init = await conn.recv()
        await conn.send({"id": init["id"], "error": {"code": -32600,
                                                      "message": "Already initialized"}})
        await conn.ws.wait_closed()
        closed.set()

    async with FakeAppServer(script, handshake=False) as fake:
        with pytest.raises(RpcError, match="Already initialized"):
            async with AppServerClient(fake.url):
                pass
        await asyncio.wait_for(closed.wait(), 2)
