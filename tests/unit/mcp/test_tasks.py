"""`codex_message_send` as an MCP task (mcp/tasks.py), spoken to by the SDK's own client
with the `io.modelcontextprotocol/tasks` extension — the shape the pinned Claude Code
uses interactively (spikes/mcp_tasks): a `resultType: "task"` answer, `tasks/get` polls,
`tasks/cancel` (twice). Against the in-memory app-server of test_claude_tools.py."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult

from codexbridge.cli.talk_cmd import talk
from codexbridge.codex.client import AppServerClient
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox.location import mail_path
from codexbridge.mcp import tasks
from codexbridge.mcp.runtime import Runtime
from codexbridge.mcp.server import build_server
from codexbridge.mcp.tasks import STOPPED
from codexbridge.messages import courier, to_codex
from codexbridge.messages.listeners import record_listener
from codexbridge.messages.records import APPROVAL_CHARS, DeliveryState, DeliveryStore, ToCodex
from codexbridge.messages.routing import SESSION_ENV
from tests.support.helpers import eventually
from tests.support.memory_appserver import MemoryAppServer
from tests.support.task_client import (
    MODERN,
    TaskHandle,
    Tasks,
    ask,
    task_cancel,
    task_get,
    until,
)
from tests.unit.mcp import test_claude_tools as tools
from tests.unit.mcp.test_claude_tools import APPROVAL, call, client_for, log, runtime

codex = tools.codex  # the in-memory app-server fixture of the blocking calls' tests

pytestmark = pytest.mark.usefixtures("schema_guard")


def tasks_client(rt: Runtime) -> Client:
    """A client that takes tasks, as Claude Code's interactive session does."""
    return Client(build_server(rt.settings, rt), mode=MODERN, extensions=[Tasks()])


async def started(client: Client, text: str) -> TaskHandle:
    """Ask `text` of a client that takes tasks: the task handle."""
    handle = await ask(client, {"text": text})
    assert isinstance(handle, TaskHandle), handle
    return handle


def record(delivery_id: str) -> ToCodex:
    found = DeliveryStore().get(delivery_id, ToCodex)
    assert found is not None
    return found


@pytest.fixture(autouse=True)
def _short_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """A poll of a running task answers after 50 ms here (2 s in use)."""
    monkeypatch.setattr(tasks, "HOLD_S", 0.05)


@pytest.fixture(autouse=True)
def _no_courier(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The courier a task asks for watches the MCP server's pid: not started here."""
    from codexbridge.messages import courier_link

    asked: list[list[str]] = []
    monkeypatch.setattr(courier_link, "ensure", lambda ids, wait=0.0: asked.append(ids) or True)
    return asked


async def test_a_task_is_its_delivery_and_its_result_the_blocking_calls(
        tmp_path: Path, codex: MemoryAppServer, _no_courier: list[list[str]]) -> None:
    rt = runtime(tmp_path, codex)
    async with tasks_client(rt) as client:
        handle = await ask(client, {"text": "HOLD:t1 what is left?"})
        assert isinstance(handle, TaskHandle) and handle.status == "working"
        assert handle.poll_interval_ms == 250
        rec = record(handle.task_id)  # the task id IS the delivery id
        assert rec.task and rec.blocking and rec.needs_courier
        assert handle.task_id in DeliveryStore().pending()  # the courier watches it
        await eventually(lambda: "start HOLD:t1 what is left?" in log(codex))
        working = await task_get(client, handle.task_id)
        assert working["status"] == "working" and "result" not in working
        await codex.release("t1")
        done = await until(client, handle.task_id, "completed")
    async with client_for(rt) as plain:  # the same ask as a blocking call
        inline = await call(plain, "codex_message_send", {"text": "what is left?"})
    assert _no_courier == [[handle.task_id]]
    sc = done["result"]["structuredContent"]
    assert sc["ok"] and sc["data"]["reply"] == "MOCK REPLY: HOLD:t1 what is left?"
    assert sc["data"]["deliveryId"] == handle.task_id
    assert set(sc["data"]) == set(inline["data"])  # the blocking call's very result
    final = record(handle.task_id)
    assert final.state is DeliveryState.DELIVERED and final.reply_mail_id is None
    assert final.task_status == "completed"
    shown = CliRunner().invoke(talk, ["status", handle.task_id])
    assert shown.exit_code == 0 and "is an MCP task" in shown.output
    assert "last told: completed" in shown.output
    listed = CliRunner().invoke(talk, ["status"])
    assert f"{handle.task_id}  delivered" in listed.output and "(MCP task)" in listed.output
    assert [s["state"] for s in final.history] == ["queued", "delivering", "awaiting-reply",
                                                   "delivered"]


async def test_a_poll_of_a_running_task_is_answered_the_moment_it_ends(
        tmp_path: Path, codex: MemoryAppServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tasks, "HOLD_S", 60.0)
    async with tasks_client(runtime(tmp_path, codex)) as client:
        handle = await started(client, "HOLD:lp long poll")
        await eventually(lambda: "start HOLD:lp long poll" in log(codex))
        poll = asyncio.create_task(task_get(client, handle.task_id))
        await asyncio.sleep(0.05)
        assert not poll.done()  # held while Codex works
        await codex.release("lp")
        assert (await asyncio.wait_for(poll, 10))["status"] == "completed"  # that poll


async def test_the_reply_waits_on_the_record_until_the_session_takes_it(
        tmp_path: Path, codex: MemoryAppServer) -> None:
    async with tasks_client(runtime(tmp_path, codex)) as client:
        handle = await started(client, "quick one")
        await eventually(lambda: record(handle.task_id).reply_preview)
        held = record(handle.task_id)
        # not final: the courier mails it should this session end before taking it
        assert held.state is DeliveryState.AWAITING_REPLY and held.needs_courier
        await until(client, handle.task_id, "completed")
        again = await task_get(client, handle.task_id)  # a second poll: the same answer
    assert again["status"] == "completed"
    assert record(handle.task_id).state is DeliveryState.DELIVERED


async def test_tasks_told_their_end_long_ago_are_let_go(
        tmp_path: Path, codex: MemoryAppServer, monkeypatch: pytest.MonkeyPatch) -> None:
    rt = runtime(tmp_path, codex)
    server = build_server(rt.settings, rt)
    [ext] = [e for e in server._extensions if isinstance(e, tasks.AskTasks)]
    async with Client(server, mode=MODERN, extensions=[Tasks()]) as client:
        first = await started(client, "one")
        await until(client, first.task_id, "completed")
        monkeypatch.setattr(tasks, "KEEP_TOLD_S", 0.0)
        second = await started(client, "two")
        assert list(ext.tasks) == [second.task_id]  # the first one's result is let go


async def test_cancel_interrupts_the_turn_and_is_idempotent(tmp_path: Path,
                                                           codex: MemoryAppServer) -> None:
    async with tasks_client(runtime(tmp_path, codex)) as client:
        handle = await started(client, "HOLD:never a long job")
        await eventually(lambda: record(handle.task_id).turn_id)
        # Claude Code's TaskStop sends tasks/cancel twice, 30 ms apart (measured)
        one, two = await asyncio.gather(task_cancel(client, handle.task_id),
                                        task_cancel(client, handle.task_id))
        assert one["status"] == two["status"] == "cancelled"
        await eventually(lambda: [e for e, _ in codex.turn_log] == ["start", "interrupt",
                                                                    "done"])
        later = await task_get(client, handle.task_id)
    assert later["status"] == "cancelled"
    assert len(codex.requests("turn/interrupt")) == 1
    final = record(handle.task_id)
    assert final.state is DeliveryState.FAILED and final.reason == STOPPED


async def test_cancel_before_the_turn_starts_takes_it_out_of_codexs_queue(
        tmp_path: Path, codex: MemoryAppServer) -> None:
    async with tasks_client(runtime(tmp_path, codex)) as client:
        first = await ask(client, {"text": "HOLD:a the human's long turn"})
        second = await ask(client, {"text": "behind it"})
        assert isinstance(first, TaskHandle) and isinstance(second, TaskHandle)
        await eventually(lambda: codex.queued.get("thread-1"))
        await task_cancel(client, second.task_id)
        assert not codex.queued.get("thread-1") and not codex.requests("turn/interrupt")
        await codex.release("a")
        await until(client, first.task_id, "completed")
    assert "start behind it" not in log(codex)
    assert record(second.task_id).state is DeliveryState.FAILED


async def test_an_approval_waiting_in_the_tui_is_input_required(
        tmp_path: Path, codex: MemoryAppServer) -> None:
    codex.server_requests = [APPROVAL]
    async with tasks_client(runtime(tmp_path, codex, approval_timeout=1.0)) as client:
        handle = await started(client, "RUN: touch x")
        waiting = await until(client, handle.task_id, "input_required")
        # nothing for the client to answer: the human answers in the Codex TUI
        assert waiting["inputRequests"] == {} and "Codex TUI" in waiting["statusMessage"]
        assert record(handle.task_id).approval_waiting
        assert record(handle.task_id).task_status == "input_required"  # `talk status`
        done = await until(client, handle.task_id, "completed")  # declined at the deadline
    [approval] = done["result"]["structuredContent"]["data"]["approvals"]
    assert approval["outcome"].startswith("declined after deadline")
    assert record(handle.task_id).approval_waiting is None


async def test_a_failed_turn_is_a_failed_task_with_the_reason(
        tmp_path: Path, codex: MemoryAppServer) -> None:
    async with tasks_client(runtime(tmp_path, codex)) as client:
        handle = await started(client, "FAIL_TURN now")
        failed = await until(client, handle.task_id, "failed")
    assert "mock model failure" in failed["error"]["message"]
    assert failed["error"]["data"]["error"]["code"] == "TURN_FAILED"
    assert record(handle.task_id).state is DeliveryState.FAILED


async def test_what_fails_before_a_record_is_answered_as_today(
        tmp_path: Path, codex: MemoryAppServer) -> None:
    async with tasks_client(runtime(tmp_path, codex)) as client:
        out = await ask(client, {"text": "x", "threadId": "nope"})
        with pytest.raises(MCPError, match="no task"):
            await task_get(client, "req_1_nope")
    assert isinstance(out, CallToolResult) and out.is_error
    assert out.structured_content is not None
    assert out.structured_content["error"]["code"] == "NO_LIVE_THREAD"
    assert DeliveryStore().recent() == []


@pytest.mark.parametrize("how", ["legacy", "modern-without-the-extension", "wait-false",
                                 "http-server"])
async def test_clients_without_tasks_keep_todays_call(tmp_path: Path, codex: MemoryAppServer,
                                                      how: str) -> None:
    rt = runtime(tmp_path, codex)
    if how == "legacy":
        context = client_for(rt)
    elif how == "modern-without-the-extension":
        context = Client(build_server(rt.settings, rt), mode=MODERN)
    elif how == "http-server":  # built as `mcp --http` builds it: the client takes tasks
        context = Client(build_server(rt.settings, rt, tasks=False), mode=MODERN,
                         extensions=[Tasks()])
    else:
        context = tasks_client(rt)
    async with context as client:
        sc = await call(client, "codex_message_send",
                        {"text": "plain", **({"wait": False} if how == "wait-false" else {})})
    if how == "wait-false":  # a receipt: the courier carries it (not started here)
        assert sc["data"]["state"] in ("queued", "delivering")
        assert not record(sc["data"]["deliveryId"]).task
    else:
        assert sc["data"]["reply"] == "MOCK REPLY: plain"
        rec = record(sc["data"]["deliveryId"])
        assert not rec.task and rec.state is DeliveryState.DELIVERED


async def test_a_session_that_ends_before_taking_the_reply_gets_it_as_mail(
        tmp_path: Path, codex: MemoryAppServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The MCP server (the task's owner) dies with its session before the reply was
    taken: the courier, which watched its pid, follows the turn and mails the reply to
    the session's mailbox — once; never lost, never twice."""
    inbox = inbox_dir()
    record_listener(inbox, "asker", {"cwd": "/work/project", "session_id": "s-1"}, "stop-hook")
    monkeypatch.setenv(SESSION_ENV, "s-1")  # what Claude Code gives its MCP servers
    async with tasks_client(runtime(tmp_path, codex)) as client:
        handle = await started(client, "mine")
        await until(client, handle.task_id, "completed")
    rec = record(handle.task_id)  # a task names where its answer would go
    assert rec.reply_to == "asker" and "mail to asker" in (rec.reply_to_how or "")
    # The session died mid-task (its MCP server with it: os._exit on SIGTERM, so nothing
    # is written): a task's record, its caller's pid gone.
    sent = to_codex.blocking_request("answer me later", "thread-1", task=True,
                                     env={SESSION_ENV: "s-1", "CLAUDECODE": "1"})
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    DeliveryStore().update(sent.record.id, lambda r: setattr(r, "courier_pid", gone.pid))
    monkeypatch.setattr(courier, "_client", lambda _r: AppServerClient(
        "ws://memory", connector=codex.connector))
    done = await asyncio.wait_for(courier.carry(DeliveryStore(), sent.record.id), 10)
    assert done.state is DeliveryState.DELIVERED and done.reply_mail_id and done.recovered
    assert "mail to mailbox asker" in done.warnings[-1]
    mails = Path(mail_path(inbox, "asker")).read_text(encoding="utf-8")
    assert mails.count("MOCK REPLY: answer me later") == 1
    assert "MOCK REPLY: mine" not in mails  # the task's own reply was its result only
    assert os.stat(mail_path(inbox, "asker")).st_mode & 0o777 == 0o600


async def test_a_server_shutting_down_leaves_the_task_to_the_courier(
        tmp_path: Path, codex: MemoryAppServer) -> None:
    """stdin closed (Claude killed): the SDK's shutdown cancels the running call — its
    record is not ended as a failure but left, unfinished, for the courier."""
    rt = runtime(tmp_path, codex)
    server = build_server(rt.settings, rt)
    async with Client(server, mode=MODERN, extensions=[Tasks()]) as client:
        handle = await started(client, "HOLD:sd shutting down")
        await eventually(lambda: record(handle.task_id).turn_id)
        [ext] = [e for e in server._extensions if isinstance(e, tasks.AskTasks)]
        runner = ext.tasks[handle.task_id].runner
        runner.cancel()
        await asyncio.wait([runner])
    left = record(handle.task_id)
    assert not left.state.final and left.task and left.needs_courier, left


async def test_the_courier_only_watches_while_the_tasks_server_lives(
        tmp_path: Path, codex: MemoryAppServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(courier, "TICK", 0.01)
    async with tasks_client(runtime(tmp_path, codex)) as client:
        handle = await started(client, "HOLD:w watched")
        watching = asyncio.create_task(courier.carry(DeliveryStore(), handle.task_id))
        await asyncio.sleep(0.05)
        assert not watching.done() and record(handle.task_id).blocking
        await codex.release("w")
        await until(client, handle.task_id, "completed")
        done = await asyncio.wait_for(watching, 5)
    assert done.state is DeliveryState.DELIVERED and done.reply_mail_id is None
    assert len(codex.requests("thread/queue/add")) == 1  # never resent


def test_what_an_approval_asks_is_bounded_on_the_record() -> None:
    """Codex's words (a command of any length) go to `talk status` and to the client's
    status line: kept to APPROVAL_CHARS."""
    rec = ToCodex(id="req_1_abcdef", thread_id="t")
    rec.progress("approval", None, None, "run a command: " + "x" * 10_000)
    assert rec.approval_waiting is not None
    assert len(rec.approval_waiting) == APPROVAL_CHARS + 1  # and the "…"
    rec.progress("approval", None, None, None)
    assert rec.approval_waiting is None
