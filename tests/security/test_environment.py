"""Threat: the user's environment mistaken for a bug — and setup left half-done.

A read-only state home or HOME, a full disk, Codex's sandbox (a command Codex runs
cannot write outside its workspace), a sender killed between two writes: none is a bug
in codexbridge. Each must end in a documented exit code (73: the state cannot be
written) and a message naming the path and the fix — never exit 70 "a bug" with a
traceback — and `setup` must change nothing when it cannot finish.

The read-only and full disks exist only inside the command's own mount namespace
(tests/support/mounts.py): the machine's mounts are never touched.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codexbridge.host.appserver import AppServerProcess as AppServer
from codexbridge.messages.records import DeliveryState, DeliveryStore, ToCodex
from tests.support.cli import run_cli
from tests.support.mock_codex import MockResponsesServer
from tests.support.mounts import run_cli_mounted
from tests.support.raw_client import RawClient, start_user_thread

STATE = 73  # StateError (errors.py)


def no_bug(err: str) -> None:
    assert "a bug in codexbridge" not in err and "Traceback" not in err, err


def test_a_read_only_state_home_is_named_with_its_fix(tmp_path: Path) -> None:
    home = tmp_path / "state"
    assert run_cli("inbox", "push", "--new", "--to", "web", "first",
                   env={"CODEX_BRIDGE_HOME": str(home)}).code == 0
    done = run_cli_mounted(["inbox", "push", "--to", "web", "second"], read_only=[home],
                           env={"CODEX_BRIDGE_HOME": str(home), "CODEX_BRIDGE_LIVE": "0"})
    assert done.code == STATE, done.err
    no_bug(done.err)
    assert "read-only file system" in done.err and str(home) in done.err
    assert "Fix: make" in done.err and "CODEX_BRIDGE_HOME" in done.err
    peek = run_cli("inbox", "peek", "--as", "web", "--json",
                   env={"CODEX_BRIDGE_HOME": str(home)})
    assert [m["text"] for m in json.loads(peek.out)["messages"]] == ["first"]


def test_a_read_only_home_with_no_state_yet(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    done = run_cli_mounted(["inbox", "push", "--new", "--to", "web", "hi"], read_only=[user],
                           env={"HOME": str(user), "CODEX_BRIDGE_HOME": ""})
    assert done.code == STATE and str(user / ".codex-bridge") in done.err, done.err
    no_bug(done.err)


def test_a_full_disk_stores_nothing_and_says_so(tmp_path: Path) -> None:
    home = tmp_path / "state"
    home.mkdir(mode=0o700)
    done = run_cli_mounted(["inbox", "push", "--new", "--to", "web", "hi"], full=[home],
                           env={"CODEX_BRIDGE_HOME": str(home)})
    assert done.code == STATE and "the disk is full" in done.err, done.err
    assert "nothing was stored" in done.err and "free space" in done.err
    no_bug(done.err)


def test_setup_on_a_read_only_home_changes_nothing(tmp_path: Path) -> None:
    user = tmp_path / "user"
    (user / ".claude").mkdir(parents=True)
    settings = user / ".claude" / "settings.json"
    settings.write_text('{ "theme":   "dark" }\n')
    done = run_cli_mounted(["setup", "claude"], read_only=[user],
                           env={"HOME": str(user), "CODEX_BRIDGE_HOME": ""})
    assert done.code == STATE and "setup changed nothing" in done.err, done.err
    no_bug(done.err)
    assert settings.read_text() == '{ "theme":   "dark" }\n'


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_setup_that_cannot_keep_its_record_puts_every_file_back(
        tmp_path: Path, agent: str) -> None:
    """The settings can be written but the state home (where setup keeps its record for
    --remove) cannot: the settings already written are put back byte for byte, and no
    backup is left behind."""
    user = tmp_path / "user"
    for d in (".claude", ".codex"):
        (user / d).mkdir(parents=True)
    files = {user / ".claude" / "settings.json": '{ "theme":   "dark" }\n',
             user / ".codex" / "config.toml": 'model = "o3"\n'}
    for path, text in files.items():
        path.write_text(text)
    state = user / ".codex-bridge"
    state.mkdir(mode=0o700)
    done = run_cli_mounted(["setup", agent], read_only=[state],
                           env={"HOME": str(user), "CODEX_BRIDGE_HOME": ""})
    assert done.code == STATE and "setup changed nothing" in done.err, done.err
    no_bug(done.err)
    for path, text in files.items():
        assert path.read_text() == text
        assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


@pytest.mark.real_codex
async def test_a_push_from_codexs_sandbox_names_the_sandbox_and_the_way_out(
        app_server: AppServer, workdir: Path, mock_model: MockResponsesServer) -> None:
    """The real codex runs `codexbridge inbox push` in its sandbox (no escalation): the
    state home is read-only there. The model reads exit 73 and the ways that work."""
    command = (f"{sys.executable} -m codexbridge inbox push --new --to web 'from codex'; "
               "echo exit=$?")
    async with RawClient(app_server.url) as peer:
        human = await start_user_thread(peer, workdir, "first")
        since = peer.mark()
        await peer.request("turn/start", {"threadId": human.thread_id, "input": [
            {"type": "text", "text": f"RUN_SANDBOXED: {command}", "text_elements": []}]})
        await peer.wait_method("turn/completed", since=since, threadId=human.thread_id,
                               timeout=60)
    call = [c for c in mock_model.model_calls if c.rule == "tool_output"][-1]
    output = str(call.body["input"][-1]["output"])
    assert "exit=73" in output, output
    assert "claude_message_send" in output and "a bug" not in output, output


async def test_a_record_whose_text_never_came_fails_and_tells_its_asker(
        tmp_path: Path) -> None:
    """A sender killed between its two writes (an older codexbridge wrote the record
    first): the courier ends the record `failed` with the reason, at once — it neither
    crashes nor leaves the asker waiting. (Today's sender writes the text first.)"""
    from codexbridge.messages.courier import carry

    store = DeliveryStore()
    record = ToCodex(id="req_0123456789ab", conversation="conv_0123456789ab", hop=1,
                     max_hops=8, thread_id="thr", chosen_by="test", text_preview="hello")
    record.queue()
    store.save(record)
    done = await asyncio.wait_for(carry(store, record.id), 30)
    assert done.state is DeliveryState.FAILED
    assert done.reason and "cannot be read" in done.reason and "send it again" in done.reason


@pytest.mark.parametrize("args", [("inbox", "peek", "--as", "web"),
                                  ("inbox", "peek", "--as", "web", "--json"),
                                  ("inbox", "list"), ("talk", "status"), ("--help",),
                                  ("talk", "--help"), ("doctor", "--json")])
def test_a_reader_that_went_away_is_exit_74_not_a_bug(tmp_path: Path,
                                                       args: tuple[str, ...]) -> None:
    """`codexbridge … | head`: the pipe's reader is gone before we write (closed at
    once, so every write fails): README promises 74, never 70 "a bug" or Python's 120."""
    env = {**os.environ, "CODEX_BRIDGE_HOME": str(tmp_path / "state")}
    assert run_cli("inbox", "push", "--new", "--to", "web", "x" * 5000, env=env).code == 0
    proc = subprocess.Popen([sys.executable, "-m", "codexbridge", *args], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 74, err
    no_bug(err)
