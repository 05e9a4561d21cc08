"""Role claude over the SDK's in-memory transport, against the in-memory app-server.

The real AppServerClient talks to `MemoryAppServer` through its connector seam (every
frame it sends checked by the schema guard), one connection per tool call as in
production. The server runs one turn at a time per thread with codex's queue in front;
a test holds a turn open (`HOLD:<key>` in the text, ended by `server.release(key)`) to
look at the line behind it. The real app-server is in tests/real/test_mcp_codex_real.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from codexbridge.codex.client import AppServerClient
from codexbridge.codex.endpoint import Endpoint
from codexbridge.mcp.artifacts import ArtifactStore
from codexbridge.mcp.runtime import Runtime
from codexbridge.mcp.server import build_server
from codexbridge.mcp.settings import load
from codexbridge.messages.envelope import who_sends
from codexbridge.messages.frame import words_of
from tests.support import payloads
from tests.support.helpers import eventually
from tests.support.memory_appserver import MemoryAppServer, Scripted
from tests.support.mock_codex import big_text

pytestmark = pytest.mark.usefixtures("schema_guard")

APPROVAL = "item/commandExecution/requestApproval"


def words(text: str) -> str:
    """The sender's words, without the envelope a blocking send puts around them."""
    return words_of(text)


def mock_turn(text: str) -> Scripted:
    """What a turn does with its message: `HOLD:<key>` waits for release(key),
    `BIG:<n>` replies with n characters, FAIL_TURN fails; else `MOCK REPLY: <words>`."""
    said = words(text)
    hold = re.search(r"HOLD:(\w+)", said)
    big = re.search(r"BIG:(\d+)", said)
    if "FAIL_TURN" in said:
        return Scripted(reply="partial", error="mock model failure")
    return Scripted(reply=big_text(int(big.group(1))) if big else f"MOCK REPLY: {said}",
                    hold=hold.group(1) if hold else None)


def add(server: MemoryAppServer, thread_id: str, **kw: Any) -> None:
    server.threads[thread_id] = payloads.thread(thread_id, **kw)


def log(server: MemoryAppServer) -> list[str]:
    """`start <words>` / `done <words>`, in the order the turns started and ended."""
    return [f"{event} {words(text)}" for event, text in server.turn_log]


# -- fixtures --------------------------------------------------------------------------------


@pytest.fixture
def codex() -> MemoryAppServer:
    first = payloads.turn("turn-0", items=[])
    server = MemoryAppServer(
        threads=[payloads.thread("thread-1", name="Main", cwd="/work/project")],
        turns=[first], items=[
            payloads.item_entry("turn-0", payloads.user_message("first")),
            payloads.item_entry("turn-0", payloads.agent_message("MOCK REPLY: first"))],
        page_size=50, script=mock_turn, record=True)
    return server


def runtime(tmp_path: Path, codex: MemoryAppServer, **settings: Any) -> Runtime:
    s = dataclasses.replace(load("claude", {}), **{"queue_wait": 5.0, **settings})
    store = ArtifactStore(tmp_path / "artifacts", "claude", ttl=s.artifact_ttl,
                          max_bytes=s.artifact_store_max)

    @asynccontextmanager
    async def connect() -> AsyncIterator[AppServerClient]:
        async with AppServerClient("ws://memory", connector=codex.connector) as client:
            yield client

    return Runtime(settings=s, store=store, connect=connect,
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
                                                               codex: MemoryAppServer) -> None:
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
                          "conversation", "newConversation"}
    assert props["approvals"]["enum"] == ["tui", "decline"]
    assert set(tools["bridge_output_read"].input_schema["properties"]) == {
        "artifactId", "cursor", "maxBytes"}
    assert not (tools["codex_message_send"].description or " ").startswith(" ")


async def test_threads_list_shows_user_threads_only(tmp_path: Path, codex: MemoryAppServer) -> None:
    add(codex, "title-1", name=None, thread_source="thread_title", ephemeral=True)
    add(codex, "thread-2", name="Other", cwd="/elsewhere")
    async with client_for(runtime(tmp_path, codex)) as client:
        sc = await call(client, "codex_threads_list")
        assert sc["data"]["total"] == 2
        assert {t["id"] for t in sc["data"]["threads"]} == {"thread-1", "thread-2"}
        assert sc["data"]["url"] == "ws://fake:1"
        one = await call(client, "codex_threads_list", {"limit": 1})
        assert len(one["data"]["threads"]) == 1 and one["data"]["truncated"] is True


async def test_send_returns_the_reply_and_resolves_names(tmp_path: Path,
                                                         codex: MemoryAppServer) -> None:
    async with client_for(runtime(tmp_path, codex)) as client:
        sc = await call(client, "codex_message_send", {"text": "hello"})
        data = sc["data"]
        assert data["reply"] == "MOCK REPLY: hello" and data["status"] == "completed"
        assert data["threadId"] == "thread-1" and data["artifact"] is None
        assert data["replyBytes"] == len("MOCK REPLY: hello")
        sc = await call(client, "codex_message_send", {"text": "by name", "threadId": "Main"})
        assert sc["data"]["reply"] == "MOCK REPLY: by name"
    assert len(codex.requests("thread/resume")) == 2


async def test_thread_selection_errors(tmp_path: Path, codex: MemoryAppServer) -> None:
    async with client_for(runtime(tmp_path, codex)) as client:
        sc = await call(client, "codex_message_send", {"text": "x", "threadId": "nope"})
        assert code_of(sc) == "NO_LIVE_THREAD" and sc["error"]["retryable"] is True
        add(codex, "thread-2", name="Main")
        sc = await call(client, "codex_message_send", {"text": "x"})
        assert code_of(sc) == "AMBIGUOUS_THREAD" and sc["error"]["retryable"] is False
        assert {c["id"] for c in sc["error"]["details"]["candidates"]} == {"thread-1",
                                                                            "thread-2"}
        sc = await call(client, "codex_message_send", {"text": "x", "threadId": "Main"})
        assert code_of(sc) == "AMBIGUOUS_THREAD"
        add(codex, "fresh", name="Fresh")  # loaded, but no turn has started yet
        codex.refuse["thread/resume"] = "no rollout found for thread id fresh"
        sc = await call(client, "codex_message_send", {"text": "x", "threadId": "fresh"})
        assert code_of(sc) == "NO_ROLLOUT" and "send one message" in sc["error"]["message"]
    assert "start x" not in log(codex)


async def test_argument_errors(tmp_path: Path, codex: MemoryAppServer) -> None:
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
    assert log(codex) == []


async def test_turn_outcomes_map_to_codes(tmp_path: Path, codex: MemoryAppServer) -> None:
    async with client_for(runtime(tmp_path, codex)) as client:
        sc = await call(client, "codex_message_send", {"text": "FAIL_TURN please"})
        assert code_of(sc) == "TURN_FAILED" and sc["error"]["retryable"] is False
        details = sc["error"]["details"]
        assert details["turnStarted"] is True and details["partialReply"] == "partial"
        assert "mock model failure" in sc["error"]["message"]
        codex.refuse["thread/queue/add"] = "Invalid request: turn refused"
        sc = await call(client, "codex_message_send", {"text": "refused"})
        assert code_of(sc) == "TURN_START_FAILED" and sc["error"]["retryable"] is True
        del codex.refuse["thread/queue/add"]
        codex.unreachable = True
        sc = await call(client, "codex_message_send", {"text": "x"})
        assert code_of(sc) == "CODEX_CONNECT_FAILED"
        for tool in ("codex_threads_list", "codex_thread_read"):
            assert code_of(await call(client, tool)) == "CODEX_CONNECT_FAILED"
        status = await call(client, "bridge_status")
        assert status["data"]["appServer"]["reachable"] is False


async def test_decline_answers_approvals_and_records_them(tmp_path: Path,
                                                          codex: MemoryAppServer) -> None:
    codex.server_requests = [APPROVAL]
    async with client_for(runtime(tmp_path, codex)) as client:
        sc = await call(client, "codex_message_send", {"text": "RUN: touch x",
                                                       "approvals": "decline"})
    assert sc["data"]["reply"] == "MOCK REPLY: RUN: touch x"
    [answer] = codex.answers.values()  # what codex heard
    assert answer["result"]["decision"] == "decline"
    [approval] = sc["data"]["approvals"]
    assert approval["method"] == APPROVAL
    assert approval["outcome"] == "declined"


async def test_turn_timeout_is_not_retryable_and_holds_the_thread(
        tmp_path: Path, codex: MemoryAppServer) -> None:
    rt = runtime(tmp_path, codex)
    async with client_for(rt) as client:
        sc = await call(client, "codex_message_send", {"text": "HOLD:a slow",
                                                       "timeoutMs": 1000})
        assert code_of(sc) == "TURN_TIMEOUT" and sc["error"]["retryable"] is False
        assert sc["error"]["details"]["turnStarted"] is True
        assert sc["error"]["details"]["timeoutMs"] == 1000
        # the timed-out turn still runs: the next send waits in codex's queue behind it
        assert "thread-1" in codex.running
        nxt = asyncio.create_task(call(client, "codex_message_send", {"text": "next"}))
        await eventually(lambda: codex.queued.get("thread-1"))
        assert log(codex) == ["start HOLD:a slow"]
        await codex.release("a")
        sc = await asyncio.wait_for(nxt, 10)
        assert sc["data"]["reply"] == "MOCK REPLY: next"
    assert log(codex) == ["start HOLD:a slow", "done HOLD:a slow", "start next", "done next"]


async def test_same_thread_sends_run_one_at_a_time_in_order(
        tmp_path: Path, codex: MemoryAppServer) -> None:
    rt = runtime(tmp_path, codex)
    async with client_for(rt) as client:
        tasks = []
        for name in ("a", "b", "c", "d"):
            tasks.append(asyncio.create_task(
                call(client, "codex_message_send", {"text": f"HOLD:{name} {name}"})))
            # until this send stands in line (running or queued)
            await eventually(lambda: len(codex.queued.get("thread-1", [])) == len(tasks) - 1
                                and "thread-1" in codex.running)
        assert len(codex.queued["thread-1"]) == 3
        for name in ("d", "c", "b", "a"):  # the order of the releases must not matter
            await codex.release(name)
        results = await asyncio.wait_for(asyncio.gather(*tasks), 20)
    assert [r["data"]["reply"] for r in results] == [f"MOCK REPLY: HOLD:{n} {n}"
                                                      for n in "abcd"]
    assert log(codex) == [f"{e} HOLD:{n} {n}" for n in "abcd" for e in ("start", "done")]


async def test_different_threads_run_side_by_side(tmp_path: Path,
                                                  codex: MemoryAppServer) -> None:
    add(codex, "thread-2", name="Second")
    async with client_for(runtime(tmp_path, codex)) as client:
        one = asyncio.create_task(call(client, "codex_message_send",
                                       {"text": "HOLD:x one", "threadId": "thread-1"}))
        two = asyncio.create_task(call(client, "codex_message_send",
                                       {"text": "HOLD:y two", "threadId": "thread-2"}))
        await eventually(lambda: len(codex.running) == 2)
        assert sorted(log(codex)) == ["start HOLD:x one", "start HOLD:y two"]
        await codex.release("y")
        assert (await asyncio.wait_for(two, 10))["ok"] is True
        assert not one.done()
        await codex.release("x")
        assert (await asyncio.wait_for(one, 10))["ok"] is True


async def test_queue_timeout_leaves_line_and_later_work_keeps_its_place(
        tmp_path: Path, codex: MemoryAppServer) -> None:
    rt = runtime(tmp_path, codex, queue_wait=0.3)
    async with client_for(rt) as client:
        head = asyncio.create_task(call(client, "codex_message_send", {"text": "HOLD:h head"}))
        await eventually(lambda: "start HOLD:h head" in log(codex))
        sc = await call(client, "codex_message_send", {"text": "impatient"})
        assert code_of(sc) == "THREAD_QUEUE_TIMEOUT" and sc["error"]["retryable"] is True
        assert sc["error"]["details"]["turnStarted"] is False
        assert codex.queued["thread-1"] == []  # taken back out of codex's queue
        await codex.release("h")
        await head
        sc = await call(client, "codex_message_send", {"text": "later"})
        assert sc["ok"]
    assert "start impatient" not in log(codex)


async def test_a_thread_busy_in_the_tui_is_waited_for(tmp_path: Path,
                                                      codex: MemoryAppServer) -> None:
    # the human is mid-turn in the TUI
    codex.running["thread-1"] = "human-turn"
    codex.threads["thread-1"]["status"] = {"type": "active", "activeFlags": []}
    async with client_for(runtime(tmp_path, codex, queue_wait=0.3)) as client:
        sc = await call(client, "codex_message_send", {"text": "x"})
        assert code_of(sc) == "THREAD_QUEUE_TIMEOUT" and sc["error"]["details"]["busy"]
        del codex.running["thread-1"]
        codex.threads["thread-1"]["status"] = {"type": "idle"}
        assert (await call(client, "codex_message_send", {"text": "x"}))["ok"]


async def test_large_reply_becomes_an_artifact_and_pages_back_exactly(
        tmp_path: Path, codex: MemoryAppServer) -> None:
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


async def test_output_read_errors(tmp_path: Path, codex: MemoryAppServer) -> None:
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


async def test_capture_cap_and_unusable_store(tmp_path: Path, codex: MemoryAppServer) -> None:
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


async def test_thread_read_inline_and_as_artifact(tmp_path: Path, codex: MemoryAppServer) -> None:
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


async def test_bridge_status(tmp_path: Path, codex: MemoryAppServer) -> None:
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
                                                                codex: MemoryAppServer) -> None:
    """A caller that goes away mid-turn (MCP cancel, client exit) must not free the thread
    while the turn still runs."""
    rt = runtime(tmp_path, codex)
    from codexbridge.mcp.codex_tools import send

    claude = who_sends({}, mcp_role="claude")
    task = asyncio.create_task(send(rt, "HOLD:c cancelled", None, None, None, sender=claude))
    await eventually(lambda: "start HOLD:c cancelled" in log(codex))
    # Cancel until it is gone: Python 3.11's asyncio.wait_for swallows a cancel that
    # arrives as its future completes (here: codex's answer to the queued message).
    while not task.done():
        task.cancel()
        await asyncio.wait([task], timeout=0.1)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert "thread-1" in codex.running  # the turn runs on without its caller
    later = asyncio.create_task(send(rt, "after", None, None, None, sender=claude))
    await eventually(lambda: codex.queued.get("thread-1"))
    assert "start after" not in log(codex)
    await codex.release("c")
    out = await asyncio.wait_for(later, 10)
    assert out.data["reply"] == "MOCK REPLY: after"


async def test_a_blocking_send_carries_the_envelope_and_spends_a_hop(
        tmp_path: Path, codex: MemoryAppServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_BRIDGE_MAX_HOPS", "4")
    async with client_for(runtime(tmp_path, codex)) as client:
        sc = await call(client, "codex_message_send", {"text": "review it"})
        assert sc["ok"]
        sent = codex.requests("thread/queue/add")[-1]["params"]["input"][0]["text"]
        header = sent.split("\n\n", 1)[0]
        assert words_of(sent) == "review it"
        assert re.match(r"\[codexbridge [a-z0-9]{6}\] from Claude Code — a peer AI agent", header)
        assert "hop 1/4" in header and "the asking Claude waits" in header
        conv = re.search(r"(conv_[0-9a-f]+)", header).group(1)  # type: ignore[union-attr]
        for n in range(3):
            assert (await call(client, "codex_message_send", {"text": f"again {n}",
                                                              "conversation": conv}))["ok"]
        sc = await call(client, "codex_message_send", {"text": "fifth",
                                                       "conversation": conv})
        assert code_of(sc) == "HOP_LIMIT" and sc["error"]["retryable"] is False
    assert "start fifth" not in log(codex)
