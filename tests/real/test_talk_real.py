"""`codexbridge talk` against the real codex 0.169.0 app-server and the mock model.

A RawClient stands in for the TUI where the test needs a second client's view (the real
TUI has its own tests in test_tui_real.py).
"""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest

from codexbridge.host.appserver import AppServerProcess as AppServer
from tests.support.cli import arun_cli, astart_cli, run_cli
from tests.support.mock_codex import MockResponsesServer
from tests.support.raw_client import RawClient, run_turn, start_user_thread

pytestmark = pytest.mark.real_codex

APPROVAL = "item/commandExecution/requestApproval"


@pytest.fixture
def url_env(app_server: AppServer) -> dict[str, str]:
    return {"CODEX_BRIDGE_URL": app_server.url}


async def test_say_streams_reply_and_peer_sees_the_turn(
        app_server: AppServer, workdir: Path, url_env: dict[str, str]) -> None:
    async with RawClient(app_server.url) as peer:
        user = await start_user_thread(peer, workdir, "first message from the human")
        since = peer.mark()
        res = await arun_cli("talk", "say", "hello from the bridge", env=url_env)
        assert res.code == 0, res.err
        assert res.out.strip() == "MOCK REPLY: hello from the bridge"
        # stderr is a pipe here (as in Claude's Bash tool): the reply is said once, on
        # stdout — it streams to stderr only for a terminal (test_talk_tty_real)
        assert "MOCK REPLY: hello from the bridge" not in res.err
        # the peer (standing in for the TUI) saw the bridge's message, deltas and completion
        started = await peer.wait_for(
            lambda n: n.get("method") == "item/started"
            and n["params"]["item"].get("type") == "userMessage", since=since)
        assert started["params"]["threadId"] == user.thread_id
        assert started["params"]["item"]["content"][0]["text"] == "hello from the bridge"
        deltas = [n for n in peer.notifications[since:]
                  if n.get("method") == "item/agentMessage/delta"]
        assert "".join(d["params"]["delta"] for d in deltas) == \
            "MOCK REPLY: hello from the bridge"
        done = await peer.wait_method("turn/completed", since=since)
        assert done["params"]["turn"]["status"] == "completed"


async def test_say_json_and_stdin(app_server: AppServer, workdir: Path,
                                  url_env: dict[str, str]) -> None:
    async with RawClient(app_server.url) as peer:
        user = await start_user_thread(peer, workdir, "first")
        res = await arun_cli("talk", "say", "--json", "--quiet", "--thread", user.thread_id,
                             "json please", env=url_env)
        assert res.code == 0, res.err
        data = json.loads(res.out)
        assert data["ok"] is True
        assert data["thread_id"] == user.thread_id
        assert data["status"] == "completed"
        assert data["reply"] == "MOCK REPLY: json please"
        assert data["turn_id"] and data["approvals"] == []
        # what the turn cost, as the mock model reported it (doctor/mock_model.USAGE):
        # the human's own words belong to no conversation
        assert data["tokens"] == {"input": 1234, "cached": 1000, "output": 56,
                                  "conversation": None, "conversationTotal": None}
    piped = run_cli("talk", "say", "-q", "-", env=url_env, input="from stdin\n")
    assert piped.code == 0, piped.err
    assert piped.out.strip() == "MOCK REPLY: from stdin"
    said = run_cli("talk", "say", "costs", env=url_env)
    assert said.out.strip() == "MOCK REPLY: costs"  # the reply alone on stdout
    assert said.err.splitlines()[-1] == "codexbridge: tokens: 1,234 in (1,000 cached) · 56 out"


async def test_read_pages_through_a_paginated_thread(
        app_server: AppServer, workdir: Path, url_env: dict[str, str]) -> None:
    async with RawClient(app_server.url) as peer:
        user = await start_user_thread(peer, workdir, "turn one")
        await run_turn(peer, user.thread_id, "turn two")
        await run_turn(peer, user.thread_id, "turn three")
        thread = (await peer.request("thread/read", {"threadId": user.thread_id}))["thread"]
        assert thread.get("historyMode") == "paginated"
    res = run_cli("talk", "read", "--json", "--page-size", "1", env=url_env)
    assert res.code == 0, res.err
    data = json.loads(res.out)
    users = [[i["content"][0]["text"] for i in t["items"] if i["type"] == "userMessage"]
             for t in data["turns"]]
    replies = [[i["text"] for i in t["items"] if i["type"] == "agentMessage"]
               for t in data["turns"]]
    assert users == [["turn one"], ["turn two"], ["turn three"]]
    assert replies == [["MOCK REPLY: turn one"], ["MOCK REPLY: turn two"],
                       ["MOCK REPLY: turn three"]]
    text = run_cli("talk", "read", env=url_env)
    assert text.code == 0
    assert "› turn two" in text.out and "• MOCK REPLY: turn three" in text.out


async def test_list_before_any_turn_and_names(app_server: AppServer, workdir: Path,
                                              url_env: dict[str, str]) -> None:
    async with RawClient(app_server.url) as peer:
        empty = run_cli("talk", "list", "--json", env=url_env)
        assert empty.code == 0 and json.loads(empty.out)["threads"] == []
        started = await peer.request("thread/start", {"cwd": str(workdir),
                                                      "threadSource": "user"})
        tid = started["thread"]["id"]
        listed = json.loads(run_cli("talk", "list", "--json", env=url_env).out)["threads"]
        assert [t["id"] for t in listed] == [tid]
        # before the first turn the thread cannot be joined: the documented message, exit 3
        early = run_cli("talk", "say", "too early", env=url_env)
        assert early.code == 3
        assert "send one message in the Codex TUI first" in early.err
        await run_turn(peer, tid, "now it has a rollout")
        await peer.request("thread/name/set", {"threadId": tid, "name": "alpha"})
        named = run_cli("talk", "say", "-q", "--thread", "alpha", "by name", env=url_env)
        assert named.code == 0, named.err
        assert named.out.strip() == "MOCK REPLY: by name"
        partial = run_cli("talk", "say", "--thread", "alph", "never guessed", env=url_env)
        assert partial.code == 3
        assert "exact name 'alph'" in partial.err and tid in partial.err


async def test_ambiguous_target_lists_candidates(app_server: AppServer, workdir: Path,
                                                 url_env: dict[str, str]) -> None:
    async with RawClient(app_server.url) as peer:
        a = await start_user_thread(peer, workdir, "one")
        b = await start_user_thread(peer, workdir, "two")
    res = run_cli("talk", "say", "who?", env=url_env)
    assert res.code == 4
    assert a.thread_id in res.err and b.thread_id in res.err and str(workdir) in res.err
    js = run_cli("talk", "say", "--json", "who?", env=url_env)
    assert js.code == 4
    err = json.loads(js.out)["error"]
    assert err["code"] == "AMBIGUOUS_THREAD"
    assert {c["id"] for c in err["details"]["candidates"]} == {a.thread_id, b.thread_id}


def test_nothing_listening_and_no_serve() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = run_cli("talk", "say", "anyone?", env={"CODEX_BRIDGE_URL": f"ws://127.0.0.1:{port}"})
    assert res.code == 5
    assert "cannot connect" in res.err
    none = run_cli("talk", "list")
    assert none.code == 5
    assert "start `codexbridge serve` first" in none.err


async def _user_thread(app_server: AppServer, workdir: Path) -> str:
    async with RawClient(app_server.url) as peer:
        return (await start_user_thread(peer, workdir, "hello")).thread_id


async def test_approvals_decline_keeps_command_from_running(
        app_server: AppServer, workdir: Path, url_env: dict[str, str]) -> None:
    await _user_thread(app_server, workdir)
    target = workdir / "declined"
    res = await arun_cli("talk", "say", "--json", "-q", "--approvals", "decline",
                         f"RUN: touch {target}", env=url_env)
    assert res.code == 0, res.err
    data = json.loads(res.out)
    assert data["status"] == "completed"
    assert [a["outcome"] for a in data["approvals"]] == ["declined"]
    assert not target.exists()
    assert "approval: run a command" in res.err


async def test_approvals_accept_runs_the_command(
        app_server: AppServer, workdir: Path, url_env: dict[str, str]) -> None:
    await _user_thread(app_server, workdir)
    target = workdir / "accepted"
    res = await arun_cli("talk", "say", "--json", "-q", "--approvals", "accept",
                         f"RUN: touch {target}", env=url_env)
    assert res.code == 0, res.err
    assert [a["outcome"] for a in json.loads(res.out)["approvals"]] == ["accepted"]
    assert target.exists()


async def test_approvals_tui_lets_the_other_client_decide(
        app_server: AppServer, workdir: Path, url_env: dict[str, str]) -> None:
    target = workdir / "human-approved"
    async with RawClient(app_server.url) as tui:
        await start_user_thread(tui, workdir, "hello")
        say = await astart_cli("talk", "say", "--json", "-q", f"RUN: touch {target}",
                               env=url_env)
        request = await tui.next_server_request(timeout=30)
        assert request["method"] == APPROVAL
        # the bridge saw the request and chose: it waits for the TUI — an answer of its
        # own would have gone before it said so
        await say.said("waiting for the TUI")
        assert say.proc.returncode is None
        await tui.respond(request["id"], {"decision": "accept"})
        res = await say.result()
    assert res.code == 0, res.err
    data = json.loads(res.out)
    assert data["status"] == "completed"
    assert [a["outcome"] for a in data["approvals"]] == ["answered in the TUI"]
    assert "answered in the TUI" in res.err
    assert target.exists()


async def test_approvals_tui_fails_closed_after_deadline(
        app_server: AppServer, workdir: Path, url_env: dict[str, str]) -> None:
    await _user_thread(app_server, workdir)
    target = workdir / "nobody-answered"
    res = await arun_cli("talk", "say", "--json", "-q", "--approval-timeout", "1",
                         f"RUN: touch {target}", env=url_env)
    assert res.code == 0, res.err
    data = json.loads(res.out)
    assert data["status"] == "completed"
    assert data["approvals"][0]["outcome"] == "declined after deadline (fail-closed)"
    assert "fail-closed" in res.err
    assert not target.exists()
    # the env variable sets the same deadline
    res2 = await arun_cli("talk", "say", "--json", "-q", f"RUN: touch {target}",
                          env={**url_env, "CODEX_BRIDGE_APPROVAL_TIMEOUT": "0.5"})
    assert res2.code == 0 and not target.exists()


async def test_cancel_in_the_tui_is_reported_as_interrupted(
        app_server: AppServer, workdir: Path, url_env: dict[str, str]) -> None:
    async with RawClient(app_server.url) as tui:
        await start_user_thread(tui, workdir, "hello")
        say = asyncio.create_task(arun_cli("talk", "say", "--json", "-q",
                                           f"RUN: touch {workdir / 'x'}", env=url_env))
        request = await tui.next_server_request(timeout=30)
        await tui.respond(request["id"], {"decision": "cancel"})
        res = await say
    assert res.code == 7, (res.out, res.err)
    assert json.loads(res.out)["status"] == "interrupted"


async def test_failed_turn_and_timeout_exit_codes(
        app_server: AppServer, workdir: Path, url_env: dict[str, str],
        mock_model: MockResponsesServer) -> None:
    await _user_thread(app_server, workdir)
    failed = await arun_cli("talk", "say", "--json", "-q", "FAIL_TURN please", env=url_env)
    assert failed.code == 1, failed.err
    assert json.loads(failed.out)["status"] == "failed"
    turn = json.loads(failed.out)["turn_id"]
    assert f"turn {turn} failed" in failed.err
    slow = await arun_cli("talk", "say", "-q", "--timeout", "0.5", "SLOW " + "x" * 80,
                          env=url_env)
    assert slow.code == 6, slow.err
    # the same words MCP's codex_message_send uses (codex/outcome.py decides both), with
    # the command a person reads the thread with
    assert "timed out" in slow.err and "do not resend" in slow.err
    assert "codexbridge talk read" in slow.err


def test_bad_arguments_exit_2(tmp_path: Path) -> None:
    assert run_cli("talk", "say", "--cwd", str(tmp_path / "nope"), "hi").code == 2
    assert run_cli("talk", "say", "--approvals", "maybe", "hi").code == 2
    empty = run_cli("talk", "say", "-", input="  \n")
    assert empty.code == 2 and "message is empty" in empty.err


async def first_delta(client: RawClient, turn_id: str, since: int) -> None:
    """The turn is streaming (its first agentMessage delta arrived): it is running."""
    await client.wait_for(lambda n: n.get("method") == "item/agentMessage/delta"
                          and n["params"].get("turnId") == turn_id, 30, since=since)


async def test_say_waits_for_a_running_turn_unless_steer(
        app_server: AppServer, workdir: Path, url_env: dict[str, str]) -> None:
    from tests.support.raw_client import start_turn, wait_turn

    async with RawClient(app_server.url) as human:
        user = await start_user_thread(human, workdir, "hello")
        since = human.mark()
        human_turn = await start_turn(human, user.thread_id, "SLOW " + "h" * 48)
        await first_delta(human, human_turn, since)
        res = await arun_cli("talk", "say", "--json", "-q", "my own turn please", env=url_env)
        assert res.code == 0, res.err
        data = json.loads(res.out)
        assert "waiting for it to finish" in res.err
        assert data["turn_id"] != human_turn
        assert data["reply"] == "MOCK REPLY: my own turn please"
        first = await wait_turn(human, user.thread_id, human_turn, since=since)
        assert first.reply == "MOCK REPLY: SLOW " + "h" * 48  # the human's turn untouched

        since = human.mark()
        human_turn = await start_turn(human, user.thread_id, "SLOW " + "k" * 48)
        await first_delta(human, human_turn, since)
        steer = await arun_cli("talk", "say", "--json", "-q", "--steer", "join in",
                               env=url_env)
        assert steer.code == 0, steer.err
        assert json.loads(steer.out)["turn_id"] == human_turn  # folded into the running turn
