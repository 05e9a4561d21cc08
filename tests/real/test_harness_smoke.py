"""The harness itself, proven against the real codex 0.169.0 app-server and TUI.

Every other real-binary test stands on these fixtures and on the mock's rule set; when one
of these fails, fix the harness before reading any other failure.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from codexbridge.host.appserver import AppServerProcess as AppServer
from codexbridge.host.appserver import launch
from codexbridge.host.procs import pid_alive
from tests.support.mock_codex import MockResponsesServer, big_text
from tests.support.raw_client import (
    RawClient,
    RawRpcError,
    resume_thread,
    run_turn,
    start_turn,
    start_user_thread,
    wait_turn,
)

pytestmark = pytest.mark.real_codex

APPROVAL = "item/commandExecution/requestApproval"


async def test_mock_serves_a_turn(app_server: AppServer, mock_model: MockResponsesServer,
                                  workdir: Path) -> None:
    async with RawClient(app_server.url) as c:
        assert c.init_result is not None and "codexHome" in c.init_result
        thread = await start_user_thread(c, workdir, "hello world")
        turn = thread.first_turn

    assert turn.status == "completed"
    assert turn.reply == "MOCK REPLY: hello world"
    assert turn.deltas == turn.reply
    assert thread.thread["ephemeral"] is False
    call = mock_model.wait_for_request(lambda r: r.user_text == "hello world")
    assert call.headers["authorization"] == "Bearer dummy-key"
    assert call.rule == "reply"
    assert call.body["stream"] is True


async def test_thread_start_accepts_user_thread_source(app_server: AppServer,
                                                       workdir: Path) -> None:
    """A client can stand in for the TUI; but thread/list drops threadSource (0.169.0)."""
    async with RawClient(app_server.url) as c:
        thread = await start_user_thread(c, workdir, "first")
        read = await c.request("thread/read", {"threadId": thread.thread_id})
        listed = await c.request("thread/list", {})

    assert thread.thread["threadSource"] == "user"
    assert read["thread"]["threadSource"] == "user"
    [entry] = [t for t in listed["data"] if t["id"] == thread.thread_id]
    # Measured on 0.169.0: thread/list reports threadSource null even for "user" threads,
    # so a bridge must confirm candidates with thread/read.
    assert entry["threadSource"] is None


async def test_second_client_sees_turn_started_by_first(app_server: AppServer,
                                                        workdir: Path) -> None:
    async with RawClient(app_server.url, name="tui-stand-in") as a, \
            RawClient(app_server.url, name="joiner") as b:
        thread = await start_user_thread(a, workdir, "first turn")
        resumed = await resume_thread(b, thread.thread_id)
        assert resumed["thread"]["id"] == thread.thread_id

        since_b = b.mark()
        result_a = await run_turn(a, thread.thread_id, "second turn")
        result_b = await wait_turn(b, thread.thread_id, result_a.turn_id, since=since_b)

    assert result_a.reply == result_b.reply == "MOCK REPLY: second turn"
    started = [n for n in result_b.notifications if n["method"] == "turn/started"]
    assert len(started) == 1


async def test_join_mid_turn_gets_final_text(app_server: AppServer, workdir: Path) -> None:
    async with RawClient(app_server.url) as a, RawClient(app_server.url) as b:
        thread = await start_user_thread(a, workdir, "first")
        since_a = a.mark()
        turn_id = await start_turn(a, thread.thread_id, "SLOW stream")
        await a.wait_method("item/agentMessage/delta", since=since_a, turnId=turn_id)
        resumed = await resume_thread(b, thread.thread_id)
        result_b = await wait_turn(b, thread.thread_id, turn_id)
        result_a = await wait_turn(a, thread.thread_id, turn_id, since=since_a)

    assert resumed["thread"]["status"]["type"] == "active"
    assert result_a.reply == result_b.reply == "MOCK REPLY: SLOW stream"
    assert len(result_b.deltas) < len(result_b.reply or "")  # joined late: missed deltas


async def test_approval_decline_round_trip(app_server: AppServer, workdir: Path,
                                           mock_model: MockResponsesServer) -> None:
    target = workdir / "should_not_exist"
    async with RawClient(app_server.url) as c:
        thread = await start_user_thread(c, workdir, "first")
        since = c.mark()
        turn_id = await start_turn(c, thread.thread_id, f"RUN: touch {target}")
        request = await c.next_server_request(timeout=30)
        assert request["method"] == APPROVAL
        params = request["params"]
        assert params["turnId"] == turn_id
        assert params["reason"] == f"Mock model wants to run: touch {target}"
        assert str(target) in params["command"]
        await c.respond(request["id"], {"decision": "decline"})
        await c.wait_method("serverRequest/resolved", since=since, requestId=request["id"])
        result = await wait_turn(c, thread.thread_id, turn_id, since=since)

    assert result.status == "completed"
    assert not target.exists()
    assert result.reply is not None and result.reply.startswith("MOCK DONE: ")
    assert "rejected by user" in result.reply
    assert [r.rule for r in mock_model.model_calls][-2:] == ["run", "tool_output"]


async def test_sandboxed_command_needs_no_approval(app_server: AppServer,
                                                   workdir: Path) -> None:
    target = workdir / "blocked"
    async with RawClient(app_server.url) as c:
        thread = await start_user_thread(c, workdir, "first")
        result = await run_turn(c, thread.thread_id, f"RUN_SANDBOXED: touch {target}")
        assert c.server_requests == []

    assert result.status == "completed"
    assert not target.exists()
    # The mock keeps 200 chars of the tool output: codex's exec header, then touch's error.
    assert result.reply is not None and result.reply.startswith("MOCK DONE: ")
    assert "Process exited with code 1" in result.reply
    assert "touch: cannot touch" in result.reply


async def test_big_reply_arrives_whole(app_server: AppServer, workdir: Path) -> None:
    async with RawClient(app_server.url) as c:
        thread = await start_user_thread(c, workdir, "first")
        result = await run_turn(c, thread.thread_id, "BIG:300000")

    expected = big_text(300_000)
    assert len(expected) == 300_000
    assert result.status == "completed"
    assert result.reply == expected
    assert result.deltas == expected


async def test_fail_turn_fails_without_retry(app_server: AppServer, workdir: Path,
                                             mock_model: MockResponsesServer) -> None:
    async with RawClient(app_server.url) as c:
        thread = await start_user_thread(c, workdir, "first")
        failed = await run_turn(c, thread.thread_id, "FAIL_TURN please")
        after = await run_turn(c, thread.thread_id, "still alive?")

    # Measured on 0.169.0 (HTTP 500 from the model, retries 0): the mock's own error
    # text is dropped; codex reports its generic 5xx message.
    assert failed.status == "failed"
    assert failed.reply is None
    assert failed.error["codexErrorInfo"] == "internalServerError"
    assert "high demand" in failed.error["message"]
    [note] = [n for n in failed.notifications if n["method"] == "error"]
    assert note["params"]["willRetry"] is False
    assert note["params"]["error"] == failed.error
    assert sum(r.rule == "fail" for r in mock_model.model_calls) == 1  # no retries
    assert after.status == "completed"
    assert after.reply == "MOCK REPLY: still alive?"


async def test_resume_before_first_turn_is_no_rollout(app_server: AppServer,
                                                      workdir: Path) -> None:
    async with RawClient(app_server.url) as a, RawClient(app_server.url) as b:
        started = await a.request("thread/start", {"cwd": str(workdir)})
        with pytest.raises(RawRpcError, match="no rollout found"):
            await resume_thread(b, started["thread"]["id"])


@pytest.mark.tmux
async def test_real_tui_talks_to_the_mock(tui_factory: Any, app_server: AppServer,
                                          workdir: Path) -> None:
    tui = tui_factory()
    tui.wait_ready()
    async with RawClient(app_server.url) as c:
        assert (await c.request("thread/loaded/list", {}))["data"] == []
        tui.send("hello from the tui")
        tui.wait_for_text("MOCK REPLY: hello from the tui")

        user_thread = await _poll(lambda: _listed_thread(c, workdir))
        read = (await c.request("thread/read", {"threadId": user_thread["id"]}))["thread"]
        assert read["threadSource"] == "user"
        assert read["ephemeral"] is False
        assert read["cwd"] == str(workdir)

        titles = await _poll(lambda: _loaded_title_threads(c))
        assert all(t["ephemeral"] for t in titles)
        await c.wait_method("thread/name/updated", threadId=user_thread["id"],
                            threadName="Mock title")

    screen = tui.capture()
    assert "› hello from the tui" in screen
    assert "• MOCK REPLY: hello from the tui" in screen
    pid = tui.pid
    tui.stop()
    assert pid is not None and not pid_alive(pid)


async def _listed_thread(c: RawClient, workdir: Path) -> dict[str, Any] | None:
    listed = await c.request("thread/list", {})
    mine = [t for t in listed["data"] if t["cwd"] == str(workdir)]
    return mine[0] if mine else None


async def _loaded_title_threads(c: RawClient) -> list[dict[str, Any]] | None:
    found = []
    for thread_id in (await c.request("thread/loaded/list", {}))["data"]:
        thread = (await c.request("thread/read", {"threadId": thread_id}))["thread"]
        if thread["threadSource"] == "thread_title":
            found.append(thread)
    return found or None


async def _poll(probe: Any, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = await probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        await asyncio.sleep(0.1)


async def test_raw_say_baseline(app_server: AppServer, workdir: Path) -> None:
    from bench.raw_say import raw_say

    async with RawClient(app_server.url) as c:
        thread = await start_user_thread(c, workdir, "first")
        since = c.mark()
        reply = await raw_say(app_server.url, thread.thread_id, "from the baseline")
        seen = await c.wait_method("item/completed", since=since)

    assert reply == "MOCK REPLY: from the baseline"
    assert seen["params"]["item"]["type"] == "userMessage"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")
def test_app_server_stops_cleanly(codex_bin: str, workdir: Path,
                                  codex_env: dict[str, str], tmp_path: Path) -> None:
    server = launch(codex_bin, workdir, codex_env, stderr_path=tmp_path / "err")
    assert server.proc.poll() is None
    server.stop()
    assert server.proc.poll() is not None
    assert "listening on" in server.stderr_text()
