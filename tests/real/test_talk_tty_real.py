"""`talk say` prints the reply once, in a terminal and into a pipe (real codex 0.169.0,
mock model).

In a terminal (stdout a pty) the reply streams to stdout and is not printed again; into
a pipe, stdout is the reply exactly once, and stderr — a pipe too, as in Claude Code's
Bash tool, which hands the model both — does not carry it a second time.
"""

from __future__ import annotations

import asyncio
import os
import pty
import sys
from pathlib import Path

import pytest

from codexbridge.host.appserver import AppServerProcess as AppServer
from tests.support.cli import arun_cli
from tests.support.raw_client import RawClient, start_user_thread

pytestmark = pytest.mark.real_codex


def _read_all(fd: int) -> bytes:
    """Everything written to the pty until its last writer closes it (EIO on Linux)."""
    out = bytearray()
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return bytes(out)
        if not chunk:
            return bytes(out)
        out += chunk


async def _say_on_a_tty(text: str, env: dict[str, str]) -> tuple[int, str, str]:
    master, slave = pty.openpty()
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "codexbridge", "talk", "say", text, env={**os.environ, **env},
            stdin=asyncio.subprocess.DEVNULL, stdout=slave, stderr=asyncio.subprocess.PIPE)
    finally:
        os.close(slave)  # the child holds its own copy: EOF comes when it exits
    try:
        screen = asyncio.get_running_loop().run_in_executor(None, _read_all, master)
        _, err = await asyncio.wait_for(proc.communicate(), 90)
        out = await asyncio.wait_for(screen, 30)
    finally:
        os.close(master)
    assert proc.returncode is not None
    return proc.returncode, out.decode().replace("\r\n", "\n"), err.decode()


async def test_say_prints_the_reply_once_on_a_terminal_and_into_a_pipe(
        app_server: AppServer, workdir: Path) -> None:
    env = {"CODEX_BRIDGE_URL": app_server.url}
    async with RawClient(app_server.url) as peer:
        await start_user_thread(peer, workdir, "first message from the human")

        code, screen, err = await _say_on_a_tty("hello on a terminal", env)
        assert code == 0, err
        reply = "MOCK REPLY: hello on a terminal"
        assert screen.count(reply) == 1, screen
        assert screen == reply + "\n"
        assert reply not in err  # streamed to the terminal, not a second time on stderr

        piped = await arun_cli("talk", "say", "hello into a pipe", env=env)
        assert piped.code == 0, piped.err
        assert piped.out == "MOCK REPLY: hello into a pipe\n"  # exactly once
        # stderr is a pipe too (Claude Code's Bash tool reads both): not a second copy
        assert "MOCK REPLY: hello into a pipe" not in piped.err, piped.err
