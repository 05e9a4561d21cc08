"""`talk send` / `talk say` started before the TUI has a thread, against the real TUI.

Before the human's first message there is nothing to join, in two stages (codex 0.169.0,
measured here): with no TUI no thread exists at all; a moment after the TUI's prompt shows
it starts its thread (loaded, threadSource user) but that thread has no rollout until the
first turn starts. Given `--wait S`, `send` (from the first stage) and `say` (from the
second) wait through that; these tests drive the real Codex TUI in tmux and check what
the human sees: the bridge's message under its envelope header, and Codex's answer to it.
Without `--wait` a send fails at once with the documented exit code 3, in both stages.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from codexbridge.errors import NoThreadError
from codexbridge.host.appserver import AppServerProcess as AppServer
from codexbridge.messages.records import ToCodex, envelope_of, from_json
from tests.support.cli import CliResult, arun_cli, run_cli
from tests.support.raw_client import RawClient
from tests.support.tmux_tui import CodexTUI

pytestmark = [pytest.mark.real_codex, pytest.mark.tmux]

HUMAN = "hello from the human"
NO_THREAD = "no user thread is loaded in the app-server: open the Codex TUI"
NO_ROLLOUT = "the thread has no rollout yet: send one message in the Codex TUI first"
TCP_ESTABLISHED = "01"


# -- readiness: the waiting CLI is connected to the app-server -----------------------------

def _cli_pid(marker: str) -> int | None:
    """The pid of the `python -m codexbridge …` process whose argv holds `marker`."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:
            continue
        if b"codexbridge" in argv and marker.encode() in argv:
            return int(entry)
    return None


def _socket_inodes(pid: int) -> set[str]:
    inodes: set[str] = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return inodes


def _connected_to(pid: int, port: int) -> bool:
    """True once `pid` holds an established TCP connection to `port`."""
    inodes = _socket_inodes(pid)
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            remote, state, inode = cols[2], cols[3], cols[9]
            if (state == TCP_ESTABLISHED and inode in inodes
                    and int(remote.rsplit(":", 1)[1], 16) == port):
                return True
    return False


async def _connected_and_waiting(task: asyncio.Task[CliResult], marker: str, port: int,
                                 timeout: float = 30.0) -> None:
    """Until the CLI started as `task` (its argv holds `marker`) has connected to the
    app-server — from then on it waits for a thread, as no thread exists yet."""
    if not os.path.isdir("/proc/self/fd"):
        return  # no procfs: the test still shows the command survives until the thread
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if task.done():
            res = task.result()
            raise AssertionError(f"exited before the human's first message: exit {res.code}"
                                 f"\n{res.out}\n{res.err}")
        pid = _cli_pid(marker)
        if pid is not None and _connected_to(pid, port):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the CLI ({marker!r}) never connected to the app-server")


# -- helpers -----------------------------------------------------------------------------

async def _screen_has(tui: CodexTUI, text: str, timeout: float = 30.0) -> str:
    return await asyncio.to_thread(tui.wait_for_text, text, timeout)


def _lines(screen: str) -> list[str]:
    return [line.rstrip() for line in screen.splitlines()]


def _block_after(lines: list[str], first: str, count: int) -> list[str]:
    """`count` lines of the screen from the (last) one equal to `first`."""
    starts = [i for i, line in enumerate(lines) if line == first]
    assert starts, f"{first!r} is not a whole line of the screen:\n" + "\n".join(lines)
    return lines[starts[-1]:starts[-1] + count]


def _courier_log(bridge_home: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in bridge_home.rglob("courier.log"))


def _user_threads(env: dict[str, str]) -> list[dict[str, object]]:
    listed = run_cli("talk", "list", "--json", env=env)
    assert listed.code == 0, listed.err
    threads: list[dict[str, object]] = json.loads(listed.out)["threads"]
    return threads


async def _tui_thread_loaded(url: str, timeout: float = 20.0) -> str:
    """The TUI's own thread: codex 0.169.0 starts it (loaded, threadSource user, no
    rollout) a moment after the prompt shows, before the human has typed anything."""
    async with RawClient(url) as c:
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while loop.time() < end:
            for tid in (await c.request("thread/loaded/list", {}))["data"]:
                thread = (await c.request("thread/read", {"threadId": tid}))["thread"]
                if thread.get("threadSource") == "user":
                    return str(tid)
            await asyncio.sleep(0.05)
    raise AssertionError("the TUI never started its thread")


# -- tests -------------------------------------------------------------------------------

async def test_send_waits_for_the_first_message_then_delivers(
        app_server: AppServer, tui_factory: Callable[[], CodexTUI],
        _isolated_state: Path) -> None:
    env = {"CODEX_BRIDGE_URL": app_server.url}
    # No TUI yet: not a single thread exists when the send starts waiting.
    assert _user_threads(env) == []
    text = "bridge message sent before the human spoke"
    send = asyncio.create_task(arun_cli(
        "talk", "send", "--wait", "60", "--json", "--reply-to", "claude-asker",
        "--timeout", "120", text, env=env))
    await _connected_and_waiting(send, text, app_server.port)

    tui = tui_factory()
    tui.wait_ready()
    await _tui_thread_loaded(app_server.url)
    assert not send.done(), "the send gave up on the TUI's thread before its first turn"
    tui.send(HUMAN)
    await _screen_has(tui, f"• MOCK REPLY: {HUMAN}")
    res = await asyncio.wait_for(send, 60)
    assert res.code == 0, res.err
    receipt = json.loads(res.out)
    assert receipt["ok"] is True
    assert receipt["thread"]["threadSource"] == "user"
    assert receipt["chosen_by"] == "only-thread"
    assert receipt["reply_to"] == "claude-asker"
    assert receipt["state"] in ("queued", "delivering", "awaiting-reply", "delivered")

    # The bridge's message and Codex's answer to it show in the human's TUI.
    await _screen_has(tui, f"  {text}")
    await _screen_has(tui, f"• MOCK REPLY: {text}")  # the mock answers the words

    status = await arun_cli("talk", "status", receipt["delivery_id"], "--wait", "60",
                            "--json", env=env)
    assert status.code == 0, status.err + _courier_log(_isolated_state)
    record = json.loads(status.out)["delivery"]
    assert record["state"] == "delivered", (record, _courier_log(_isolated_state))
    assert record["history"][-1]["state"] == "delivered"
    assert record["thread_id"] == receipt["thread_id"]
    assert record["reply_preview"] == f"MOCK REPLY: {text}"
    assert record["reply_mail_id"]

    # The reply went as mail to the reply-to mailbox, tagged with the delivery.
    peek = run_cli("inbox", "peek", "--as", "claude-asker", "--json", env=env)
    assert peek.code == 0, peek.err
    mails = json.loads(peek.out)["messages"]
    assert len(mails) == 1, mails
    mail = mails[0]
    assert mail["from"] == "codex" and mail["to"] == "claude-asker"
    assert mail["in_reply_to"] == mail["delivery_id"] == receipt["delivery_id"]
    assert mail["conversation"] == receipt["conversation"]
    assert record["reply_preview"] in mail["text"]

    # The envelope header reads as (at most three) whole lines above the message, in the
    # user message: nothing wrapped or mangled.
    screen = tui.capture(scrollback=True)
    sent = from_json(record)
    assert isinstance(sent, ToCodex)
    rest = envelope_of(sent).header()
    sealed = re.search(r"› (\[codexbridge [a-z0-9]{6}\]) " + re.escape(rest[0]), screen)
    assert sealed is not None and rest[0].startswith("from the human user's own shell"), screen
    header = [f"{sealed.group(1)} {rest[0]}", *rest[1:]]
    assert len(header) <= 3 and all(len(line) < 80 for line in header), header
    lines = _lines(screen)
    expected = [f"  {line}" for line in header[1:]] + [
        "", f"  {text}", "",
        f"  {sealed.group(1)} end of the message from the human user's own shell"]
    assert _block_after(lines, f"› {header[0]}", len(expected) + 1)[1:] == expected, screen
    # The human's own turn came first, untouched by the header.
    assert screen.index(f"› {HUMAN}") < screen.index(f"› {header[0]}")


async def test_say_waits_for_the_first_message_then_answers(
        app_server: AppServer, tui_factory: Callable[[], CodexTUI]) -> None:
    env = {"CODEX_BRIDGE_URL": app_server.url}
    tui = tui_factory()
    tui.wait_ready()
    # The TUI's thread is loaded but cannot be joined yet: no first turn.
    await _tui_thread_loaded(app_server.url)
    text = "blocking say sent before the human spoke"
    say = asyncio.create_task(arun_cli("talk", "say", "--wait", "60", "-q", text, env=env))
    await _connected_and_waiting(say, text, app_server.port)

    tui.send(HUMAN)
    await _screen_has(tui, f"• MOCK REPLY: {HUMAN}")
    res = await asyncio.wait_for(say, 60)
    assert res.code == 0, res.err
    assert res.out.strip() == f"MOCK REPLY: {text}"
    screen = await _screen_has(tui, f"• MOCK REPLY: {text}")
    assert f"› {text}" in screen
    assert screen.index(f"• MOCK REPLY: {HUMAN}") < screen.index(f"› {text}")


async def test_send_without_wait_before_any_thread_fails_clearly(
        app_server: AppServer, _isolated_state: Path) -> None:
    env = {"CODEX_BRIDGE_URL": app_server.url}
    code = NoThreadError.exit_code
    assert f"{code}   no thread to talk to" in run_cli("talk", "send", "--help").out
    assert _user_threads(env) == []

    early = await arun_cli("talk", "send", "too early", env=env)
    assert early.code == code, (early.out, early.err)
    assert early.out == ""
    assert f"codexbridge: {NO_THREAD}" in early.err and "send it one message" in early.err
    assert "Traceback" not in early.err

    as_json = await arun_cli("talk", "send", "--json", "too early", env=env)
    assert as_json.code == code, (as_json.out, as_json.err)
    error = json.loads(as_json.out)["error"]
    assert error["code"] == "NO_LIVE_THREAD" and error["retryable"] is True
    assert error["message"].startswith(NO_THREAD)

    # A --wait that runs out fails the same way, after waiting.
    short = await arun_cli("talk", "send", "--wait", "0.5", "too early", env=env)
    assert short.code == code and NO_THREAD in short.err

    # Refused before anything was recorded or started: no delivery, no courier.
    listed = json.loads(run_cli("talk", "status", "--json", env=env).out)
    assert listed["deliveries"] == []
    assert not list(_isolated_state.rglob("courier.log"))


async def test_send_without_wait_before_the_first_message_fails_like_say(
        app_server: AppServer, tui_factory: Callable[[], CodexTUI],
        _isolated_state: Path) -> None:
    env = {"CODEX_BRIDGE_URL": app_server.url}
    tui = tui_factory()
    tui.wait_ready()
    await _tui_thread_loaded(app_server.url)
    said = await arun_cli("talk", "say", "too early", env=env)
    assert said.code == NoThreadError.exit_code and NO_ROLLOUT in said.err
    sent = await arun_cli("talk", "send", "too early", env=env)
    assert sent.code == NoThreadError.exit_code, (sent.out, sent.err)
    assert NO_ROLLOUT in sent.err
    assert json.loads(run_cli("talk", "status", "--json", env=env).out)["deliveries"] == []
