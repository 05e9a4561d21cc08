"""Conversations on the real codex 0.169.0 app-server: `talk send` receipts, the courier,
delivery records, recovery, loop guards and live control.

A RawClient stands in for the TUI (the human's thread, and the second client that
sees every turn); the mock model's `HOLD:<key>` keeps a turn running exactly as long
as a test needs. Every CLI call is the real `codexbridge` in its own process.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codexbridge.codex.endpoint import Reach
from codexbridge.codex.protocol.threads import ThreadInfo
from codexbridge.host.appserver import AppServerProcess as AppServer
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.host.procs import pid_alive
from codexbridge.inbox import peek as reading
from codexbridge.messages.frame import words_of
from codexbridge.messages.records import DeliveryState, DeliveryStore
from codexbridge.messages.to_codex import prepare
from tests.support.cli import CliResult, arun_cli, run_cli
from tests.support.helpers import eventually
from tests.support.mock_codex import MockResponsesServer
from tests.support.raw_client import RawClient, resume_thread, start_user_thread

pytestmark = pytest.mark.real_codex

# `talk send` run from the test's own process: a plain shell, the human's (who_sends)
HEADER = re.compile(r"\[codexbridge [a-z0-9]{6}\] from the human user's own shell, through "
                    "codexbridge\n")


# What codex's mock model reports for one model call (doctor/mock_model.py's USAGE)
ONE_CALL = {"input": 1234, "cached": 1000, "output": 56}


@pytest.fixture
def url_env(app_server: AppServer) -> dict[str, str]:
    return {"CODEX_BRIDGE_URL": app_server.url}


def receipt_of(res: CliResult) -> dict[str, Any]:
    assert res.code == 0, res.err
    data: dict[str, Any] = json.loads(res.out)
    assert re.fullmatch(r"req_\d{13}_[a-z0-9]{6}", data["delivery_id"])
    return data


async def send(env: dict[str, str], *args: str) -> dict[str, Any]:
    return receipt_of(await arun_cli("talk", "send", "--json", *args, env=env))


async def status(env: dict[str, str], delivery_id: str, wait: float = 0) -> dict[str, Any]:
    args = ["talk", "status", delivery_id, "--json"] + (["--wait", str(wait)] if wait else [])
    res = await arun_cli(*args, env=env, timeout=wait + 60)
    assert res.code == 0, res.err
    record: dict[str, Any] = json.loads(res.out)["delivery"]
    return record


async def held(mock: MockResponsesServer, key: str) -> None:
    """Until the mock holds the turn `HOLD:<key>` mid-reply (off the event loop, so
    the CLI processes and the peer keep running meanwhile)."""
    await asyncio.to_thread(mock.wait_held, key, 60.0)


def mails(name: str) -> list[Any]:
    return reading.peek(inbox_dir(), name).mails


async def user_items(peer: RawClient, thread_id: str) -> list[dict[str, Any]]:
    page = await peer.request("thread/items/list", {"threadId": thread_id, "limit": 200})
    return [entry.get("item", entry) for entry in page["data"]
            if (entry.get("item") or entry).get("type") == "userMessage"]


def item_text(item: dict[str, Any]) -> str:
    return "".join(str(c.get("text", "")) for c in item.get("content") or [])


async def wait_dead(pid: int) -> None:
    await eventually(lambda: not pid_alive(pid), 5, f"pid {pid} to end")


async def queued(peer: RawClient, thread_id: str) -> list[dict[str, Any]]:
    page = await peer.request("thread/queue/list", {"threadId": thread_id})
    return list(page["data"])


async def wait_queued(peer: RawClient, thread_id: str, n: int) -> None:
    for _ in range(1000):
        if len(await queued(peer, thread_id)) >= n:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"codex's queue never held {n} submission(s)")


def experimental_peer(url: str) -> RawClient:
    return RawClient(url, name="tui-standin", capabilities={"experimentalApi": True})


async def test_send_returns_a_receipt_while_the_turn_runs_and_the_reply_comes_as_mail(
        app_server: AppServer, workdir: Path, mock_model: MockResponsesServer,
        url_env: dict[str, str]) -> None:
    async with RawClient(app_server.url) as peer:
        human = await start_user_thread(peer, workdir, "hello from the human")
        since = peer.mark()
        receipt = await send(url_env, "--reply-to", "asker", "HOLD:s1 please review auth.py")
        # the receipt came back while the turn is still held mid-reply
        await held(mock_model, "s1")
        rid = receipt["delivery_id"]
        assert receipt["thread_id"] == human.thread_id
        assert receipt["chosen_by"] == "only-thread" and receipt["reply_to"] == "asker"
        assert receipt["reply_to_how"] == "--reply-to"
        assert receipt["hop"] == 1 and receipt["max_hops"] == 40
        assert receipt["state"] in ("queued", "delivering", "awaiting-reply")
        running = await status(url_env, rid)
        assert running["state"] == "awaiting-reply" and running["turn_id"]
        # the second client (the TUI's view) sees the message with its envelope
        started = await peer.wait_for(
            lambda n: n.get("method") == "item/started"
            and n["params"]["item"].get("type") == "userMessage", since=since)
        item = started["params"]["item"]
        text = item_text(item)
        assert HEADER.match(text) and rid in text and "hop 1/40" in text
        assert words_of(text) == "HOLD:s1 please review auth.py"
        assert item["clientId"] == rid  # codex kept our id: how the courier finds its turn
        assert mock_model.model_calls[-1].user_text == text
        mock_model.release("s1")
        done = await status(url_env, rid, wait=60)
    assert done["state"] == "delivered" and done["recovered"] is False
    assert [h["state"] for h in done["history"]] == [
        "queued", "delivering", "awaiting-reply", "delivered"]
    assert done["reply_preview"] == "MOCK REPLY: HOLD:s1 please review auth.py"
    [mail] = mails("asker")
    assert mail.extra["in_reply_to"] == rid and mail.extra["delivery_id"] == rid
    assert mail.extra["conversation"] == receipt["conversation"]
    assert mail.text.startswith(f"Reply from Codex (thread {human.thread_id})")
    assert "MOCK REPLY: " in mail.text and mail.sender == "codex"


async def test_status_lists_recent_deliveries_and_a_send_without_mailbox_warns(
        app_server: AppServer, workdir: Path, url_env: dict[str, str]) -> None:
    async with RawClient(app_server.url) as peer:
        await start_user_thread(peer, workdir, "first")
    env = {**url_env, "CODEX_BRIDGE_MAILBOX": ""}
    res = await arun_cli("talk", "send", "no mailbox here", env=env)
    assert res.code == 0, res.err
    rid = res.out.strip()
    assert "warning: no reply-to mailbox" in res.err and f"talk status {rid}" in res.err
    done = await status(url_env, rid, wait=60)
    assert done["state"] == "delivered" and done["reply_to"] is None
    assert "MOCK REPLY" in done["reply_preview"]
    # a mock turn this short ends before the courier is up: what it cost is read back
    # from codex's rollout (codex/rollout.py), the same as a courier following it sees
    assert done["tokens"] == ONE_CALL, done
    table = run_cli("talk", "status", env=url_env)
    assert table.code == 0 and rid in table.out and "delivered" in table.out
    one = run_cli("talk", "status", rid, env=url_env)
    assert "delivered" in one.out and "reply:" in one.out
    missing = run_cli("talk", "status", "req_1_nothere", env=url_env)
    assert missing.code == 2 and "no delivery 'req_1_nothere'" in missing.err


async def test_courier_killed_mid_turn_the_answer_is_recovered_never_resent(
        app_server: AppServer, workdir: Path, mock_model: MockResponsesServer,
        url_env: dict[str, str]) -> None:
    async with RawClient(app_server.url) as peer:
        human = await start_user_thread(peer, workdir, "first")
        receipt = await send(url_env, "--reply-to", "asker", "HOLD:k1 long job")
        rid = receipt["delivery_id"]
        await held(mock_model, "k1")
        pid = DeliveryStore().get(rid).courier_pid  # type: ignore[union-attr]
        assert pid and pid_alive(pid)
        os.kill(pid, signal.SIGKILL)
        await wait_dead(pid)
        since = peer.mark()
        mock_model.release("k1")
        await peer.wait_method("turn/completed", since=since, threadId=human.thread_id)
        recovered = await status(url_env, rid)
        items = await user_items(peer, human.thread_id)
    assert recovered["state"] == "delivered" and recovered["recovered"] is True
    assert "MOCK REPLY" in recovered["reply_preview"]
    # the courier that took it over never saw the model call: codex's rollout did
    assert recovered["tokens"] == ONE_CALL, recovered
    [mail] = mails("asker")
    assert mail.text.startswith("RECOVERED reply from Codex") and mail.extra["recovered"]
    # never resent: one user message carries the request, one model call saw it
    assert [words_of(item_text(i)).endswith("HOLD:k1 long job") for i in items].count(True) == 1
    assert sum(1 for c in mock_model.model_calls if words_of(c.user_text or "").endswith(
        "HOLD:k1 long job")) == 1
    again = await status(url_env, rid)  # asking again changes nothing
    assert again["state"] == "delivered" and len(mails("asker")) == 1


async def test_courier_killed_while_codex_still_queues_the_message_is_taken_over(
        app_server: AppServer, workdir: Path, mock_model: MockResponsesServer,
        url_env: dict[str, str]) -> None:
    async with experimental_peer(app_server.url) as peer:
        human = await start_user_thread(peer, workdir, "first")
        # the human's own turn keeps the thread busy; ours waits in codex's queue
        busy = await peer.request("turn/start", {"threadId": human.thread_id, "input": [
            {"type": "text", "text": "HOLD:h1 human thinking", "text_elements": []}]})
        await held(mock_model, "h1")
        receipt = await send(url_env, "--reply-to", "asker", "queued behind the human")
        rid = receipt["delivery_id"]
        await wait_queued(peer, human.thread_id, 1)
        record = DeliveryStore().get(rid)
        assert record is not None and record.courier_pid and record.submission_id
        os.kill(record.courier_pid, signal.SIGKILL)
        await wait_dead(record.courier_pid)
        taken = await status(url_env, rid)  # a new courier takes over; nothing is resent
        assert taken["state"] == "queued" and taken["courier_pid"] != record.courier_pid
        assert len(await queued(peer, human.thread_id)) == 1
        mock_model.release("h1")
        done = await status(url_env, rid, wait=60)
        assert busy["turn"]["id"] != done["turn_id"]
    assert done["state"] == "delivered"
    assert [m.extra["in_reply_to"] for m in mails("asker")] == [rid]


async def test_a_message_codex_never_got_is_sent_once_one_it_lost_is_orphaned(
        app_server: AppServer, workdir: Path, mock_model: MockResponsesServer,
        url_env: dict[str, str]) -> None:
    async with experimental_peer(app_server.url) as peer:
        human = await start_user_thread(peer, workdir, "first")
        thread = ThreadInfo.from_wire(
            (await peer.request("thread/read", {"threadId": human.thread_id}))["thread"])
        # a courier that died before it handed the message over: the record, a dead pid
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        receipt = prepare("lost before it left", thread, "caller", reply_to="asker",
                          reach=Reach(app_server.url))
        DeliveryStore().update(receipt.delivery.id, lambda r: setattr(r, "courier_pid",
                                                                      dead.pid))
        # codex never had it: the courier that takes over sends it — once
        sent_late = await status(url_env, receipt.delivery.id, wait=60)
        assert sent_late["state"] == "delivered" and sent_late["submission_id"]
        # the same for a message whose codex queue entry is gone (deleted in codex)
        busy_since = peer.mark()
        await peer.request("turn/start", {"threadId": human.thread_id, "input": [
            {"type": "text", "text": "HOLD:h2 busy", "text_elements": []}]})
        await held(mock_model, "h2")
        second = await send(url_env, "--reply-to", "asker", "will be deleted")
        await wait_queued(peer, human.thread_id, 1)
        record = DeliveryStore().get(second["delivery_id"])
        assert record is not None and record.courier_pid and record.submission_id
        os.kill(record.courier_pid, signal.SIGKILL)
        await wait_dead(record.courier_pid)
        await peer.request("thread/queue/delete", {"threadId": human.thread_id,
                                                   "queuedSubmissionId": record.submission_id})
        gone = await status(url_env, record.id)
        assert gone["state"] == "orphaned" and "no longer has the message" in gone["reason"]
        mock_model.release("h2")
        await peer.wait_method("turn/completed", since=busy_since, threadId=human.thread_id)
        items = await user_items(peer, human.thread_id)
    assert sum("lost before it left" in item_text(i) for i in items) == 1
    assert not any("will be deleted" in item_text(i)
                   for i in items)
    assert not any("will be deleted" in (c.user_text or "") for c in mock_model.model_calls)
    told = {m.extra["in_reply_to"]: m.text for m in mails("asker")}  # nothing is silent
    assert told[receipt.delivery.id].startswith("RECOVERED reply from Codex")
    assert told[record.id].startswith(f"DELIVERY FAILED: your request {record.id}")
    assert "no longer has the message" in told[record.id]
    table = run_cli("talk", "status", env=url_env)
    assert table.out.count("orphaned") == 1


async def test_the_fifth_hop_is_refused_and_nothing_is_delivered(
        app_server: AppServer, workdir: Path, mock_model: MockResponsesServer,
        url_env: dict[str, str]) -> None:
    async with RawClient(app_server.url) as peer:
        human = await start_user_thread(peer, workdir, "first")
        # the conversation's budget is its starter's (4 here); later senders, at the
        # default of 40, are held to it
        first = await send({**url_env, "CODEX_BRIDGE_MAX_HOPS": "4"}, "--reply-to", "asker",
                           "hop one")
        conv = first["conversation"]
        ids = [first["delivery_id"]]
        for n in ("two", "three", "four"):
            r = await send(url_env, "--reply-to", "asker", "--conversation", conv, f"hop {n}")
            ids.append(r["delivery_id"])
        assert [json.loads((Path(os.environ["CODEX_BRIDGE_HOME"]) / "conversations"
                            / f"{conv}.json").read_text())["hops"][i]["n"]
                for i in range(4)] == [1, 2, 3, 4]
        refused = await arun_cli("talk", "send", "--conversation", conv, "hop five",
                                 env=url_env)
        for rid in ids:
            assert (await status(url_env, rid, wait=60))["state"] == "delivered"
        items = await user_items(peer, human.thread_id)
    assert refused.code == 9
    assert f"conversation {conv} has used its 4 hops" in refused.err
    assert "nothing was sent" in refused.err
    assert not any("hop five" in item_text(i) for i in items)
    assert not any("hop five" in (c.user_text or "") for c in mock_model.model_calls)
    assert len(DeliveryStore().recent()) == 4


async def test_two_processes_sending_to_one_thread_get_two_turns_in_order(
        app_server: AppServer, workdir: Path, mock_model: MockResponsesServer,
        url_env: dict[str, str]) -> None:
    async with experimental_peer(app_server.url) as peer:
        human = await start_user_thread(peer, workdir, "first")
        one = asyncio.create_task(arun_cli("talk", "say", "-q", "HOLD:p1 from process one",
                                           env=url_env))
        await held(mock_model, "p1")
        two = asyncio.create_task(arun_cli("talk", "say", "-q", "from process two",
                                           env=url_env))
        await wait_queued(peer, human.thread_id, 1)  # in line behind the running turn
        mock_model.release("p1")
        first, second = await asyncio.gather(one, two)
        items = await user_items(peer, human.thread_id)
    assert first.code == 0 and second.code == 0, (first.err, second.err)
    assert first.out.strip() == "MOCK REPLY: HOLD:p1 from process one"
    assert second.out.strip() == "MOCK REPLY: from process two"
    assert [item_text(i) for i in items] == ["first", "HOLD:p1 from process one",
                                             "from process two"]


async def test_a_send_from_inside_a_codex_command_into_its_own_thread_is_refused(
        app_server: AppServer, workdir: Path, mock_model: MockResponsesServer,
        url_env: dict[str, str]) -> None:
    async with RawClient(app_server.url) as peer:
        human = await start_user_thread(peer, workdir, "first")
        command = (f"{sys.executable} -m codexbridge talk send --thread {human.thread_id} "
                   "'hello myself'; echo exit=$?")
        since = peer.mark()
        await peer.request("turn/start", {"threadId": human.thread_id, "input": [
            {"type": "text", "text": f"RUN_SANDBOXED: {command}", "text_elements": []}]})
        done = await peer.wait_method("turn/completed", since=since, threadId=human.thread_id,
                                      timeout=60)
    assert done["params"]["turn"]["status"] == "completed"
    call = [c for c in mock_model.model_calls if c.rule == "tool_output"][-1]
    output = str(call.body["input"][-1]["output"])
    assert "refusing to send into thread" in output and "exit=9" in output, output
    assert DeliveryStore().recent() == []  # refused before anything was recorded


async def test_steer_lands_in_the_running_turn_and_interrupt_ends_it(
        app_server: AppServer, workdir: Path, mock_model: MockResponsesServer,
        url_env: dict[str, str]) -> None:
    async with RawClient(app_server.url) as peer:
        human = await start_user_thread(peer, workdir, "first")
        none = await arun_cli("talk", "steer", "nothing runs", env=url_env)
        assert none.code == 3 and "no turn is running" in none.err
        say = asyncio.create_task(arun_cli("talk", "say", "--json", "HOLD:st1 work on it",
                                           env=url_env))
        await held(mock_model, "st1")
        steered = await arun_cli("talk", "steer", "--json", "also check the tests",
                                 env=url_env)
        assert steered.code == 0, steered.err
        await asyncio.to_thread(mock_model.wait_for_request, lambda r: words_of(
            r.user_text or "").endswith("also check the tests"), 30)
        result = await say
        data = json.loads(result.out)
        assert data["turn_id"] == json.loads(steered.out)["turn_id"]
        assert data["status"] == "completed" and data["reply"].endswith("also check the tests")
        last = mock_model.model_calls[-1].user_text or ""
        assert re.match(r"\[codexbridge [a-z0-9]{6}\] from the human user's own shell",
                        last) and \
            "added to this turn" in last.splitlines()[0]
        # interrupt: a send's turn ends `interrupted`, its record `failed`, the asker told
        receipt = await send(url_env, "--reply-to", "asker", "HOLD:in1 stop me")
        await held(mock_model, "in1")
        since = peer.mark()
        cut = await arun_cli("talk", "interrupt", "--json", env=url_env)
        assert cut.code == 0, cut.err
        done = await peer.wait_method("turn/completed", since=since, threadId=human.thread_id)
        assert done["params"]["turn"]["status"] == "interrupted"
        failed = await status(url_env, receipt["delivery_id"], wait=60)
        mock_model.release("in1")
    assert failed["state"] == "failed" and "interrupted" in failed["reason"]
    [mail] = mails("asker")
    # it reached the thread and was stopped there (an interrupt, a `talk interrupt` here,
    # reads as the human's Esc does): not a failure to deliver, nothing to resend on its own
    assert mail.text.startswith(f"INTERRUPTED: your request {receipt['delivery_id']}")
    assert "reached the" in mail.text and "DELIVERY FAILED" not in mail.text


async def test_say_on_timeout_leave_or_interrupt_and_name(
        app_server: AppServer, workdir: Path, mock_model: MockResponsesServer,
        url_env: dict[str, str]) -> None:
    async with RawClient(app_server.url) as peer:
        human = await start_user_thread(peer, workdir, "first")
        left = await arun_cli("talk", "say", "--timeout", "1", "HOLD:t1 leave me", env=url_env)
        assert left.code == 6 and "may still be running in the Codex TUI" in left.err
        thread = (await peer.request("thread/read", {"threadId": human.thread_id}))["thread"]
        assert thread["status"]["type"] == "active"  # left running for the human
        since = peer.mark()
        mock_model.release("t1")
        await peer.wait_method("turn/completed", since=since, threadId=human.thread_id)
        since = peer.mark()
        cut = await arun_cli("talk", "say", "--timeout", "1", "--on-timeout", "interrupt",
                             "HOLD:t2 cut me", env=url_env)
        assert cut.code == 7 and "interrupted" in cut.err
        done = await peer.wait_method("turn/completed", since=since, threadId=human.thread_id)
        assert done["params"]["turn"]["status"] == "interrupted"
        mock_model.release("t2")
        named = await arun_cli("talk", "name", human.thread_id, "review-room", env=url_env)
        assert named.code == 0, named.err
        await resume_thread(peer, human.thread_id)
        thread = (await peer.request("thread/read", {"threadId": human.thread_id}))["thread"]
        assert thread["name"] == "review-room"
        by_name = await arun_cli("talk", "say", "-q", "--thread", "review-room", "by name",
                                 env=url_env)
    assert by_name.code == 0 and by_name.out.strip() == "MOCK REPLY: by name"


def test_an_answer_that_cannot_go_back_fails_its_request_and_is_kept() -> None:
    """The Stop hook hands Claude's answer to `talk send --in-reply-to`; when that cannot
    reach codex, the request says so and where the answer is — it is never `delivered`."""
    from codexbridge.messages import to_claude as inbox

    asked = inbox.request("which tests cover auth?", to="web", new=True, expect_reply=True,
                          thread="thr-gone")
    closed = {"CODEX_BRIDGE_URL": "ws://127.0.0.1:9"}  # nothing listens on the discard port
    res = run_cli("talk", "send", "--thread", "thr-gone", "--in-reply-to", asked.request,
                  "-q", "-", env=closed, input="tests/test_auth.py covers it")
    assert res.code == 5, res.err
    record = DeliveryStore().get(asked.request)
    assert record is not None and record.state is DeliveryState.FAILED
    assert record.reason and "did not reach thread thr-gone" in record.reason
    kept = Path(record.reason.rsplit("kept in ", 1)[1].rstrip(")"))
    assert kept.read_text() == "tests/test_auth.py covers it"
