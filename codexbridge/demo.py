"""`codexbridge demo`: the whole Claude → Codex path, offline, on the embedded mock model.

It starts the mock Responses API and a real `codex app-server` in a throw-away directory,
opens a user thread with a first turn (standing in for the human at the TUI — or, with
`--tui`, typing it into the real TUI in tmux), then runs the real `codexbridge talk say`
command against that thread and shows the streamed reply.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from .appserver import launch
from .binaries import find_codex
from .client import AppServerClient
from .envbaseline import child_env
from .errors import BridgeError, UsageError
from .mock.codex_home import mock_env, write_codex_home
from .mock.responses_api import MockResponsesServer
from .talk import say

HUMAN_TEXT = "Hi Codex, I am the human watching this TUI."
BRIDGE_TEXT = "Hello from Claude Code through codexbridge: what is 6 x 7?"


def run_demo(*, tui: bool, keep: bool, echo: Callable[[str], None]) -> int:
    codex = find_codex()
    tmux = shutil.which("tmux") if tui else None
    if tui and tmux is None:
        raise UsageError("--tui needs tmux (install it, or run the demo without --tui)")
    root = Path(tempfile.mkdtemp(prefix="codexbridge-demo-"))
    project = root / "project"
    project.mkdir()
    log = open(root / "app-server.log", "wb")  # noqa: SIM115 - closed in finally
    mock = MockResponsesServer().start()
    server = None
    viewer = None
    try:
        home = write_codex_home(root / "codex-home", mock.url, [project])
        env = {**child_env(os.environ), **mock_env(home), "HOME": str(root)}
        echo(f"demo: mock model (no account, loopback only) at {mock.url}")
        server = launch(codex, project, env, stderr=log)
        echo(f"demo: codex app-server listening on {server.url} (cwd {project})")
        if tui:
            from .tmux_tui import CodexTUI

            viewer = CodexTUI(codex, server.url, project, env, tmux=tmux or "tmux").start()
            viewer.wait_ready()
            echo("demo: the real Codex TUI runs in tmux; the human types the first message")
            viewer.send(HUMAN_TEXT)
            viewer.wait_for_text("MOCK REPLY: " + HUMAN_TEXT[:30], timeout=60)
        else:
            echo(f"demo: the human's first message (standing in for the TUI): {HUMAN_TEXT!r}")
            asyncio.run(_human_first_turn(server.url, project, echo))
        echo(f"demo: $ codexbridge talk say {BRIDGE_TEXT!r}")
        cli_env = {**os.environ, "CODEX_BRIDGE_URL": server.url,
                   "CODEX_BRIDGE_HOME": str(root / "bridge-home")}
        echo("demo: (the reply streams on stderr as Codex writes it)")
        # stdout is captured so the final reply is shown in order, labelled.
        done = subprocess.run([sys.executable, "-m", "codexbridge", "talk", "say",
                               "--approvals", "decline", BRIDGE_TEXT], env=cli_env,
                              stdout=subprocess.PIPE, text=True, check=False)
        echo(f"demo: talk say printed on stdout: {done.stdout.strip()!r}")
        if done.returncode != 0:
            echo(f"demo: talk say exited with {done.returncode}")
            return done.returncode
        if viewer is not None:
            screen = viewer.wait_for_text("MOCK REPLY: " + BRIDGE_TEXT[:30], timeout=30)
            echo("demo: the TUI now shows the bridge's message and Codex's reply:")
            shown = [line.rstrip() for line in screen.splitlines()
                     if line.lstrip().startswith(("›", "•")) and "Ask Codex" not in line]
            echo("\n".join("    " + line for line in shown))
            echo(f"demo: attach to watch it yourself: tmux -S {viewer.socket} attach -t tui")
        if keep or viewer is not None:
            stop = _arm_ctrl_c()
            echo(f"demo: still running; try `CODEX_BRIDGE_URL={server.url} codexbridge talk "
                 "say \"…\"`. Ctrl-C ends the demo.")
            stop.wait()
        echo("demo: done — the message and the reply went through the real app-server.")
        return 0
    finally:
        if viewer is not None:
            viewer.stop()
        if server is not None:
            server.stop()
        mock.stop()
        log.close()
        shutil.rmtree(root, ignore_errors=True)


async def _human_first_turn(url: str, project: Path, echo: Callable[[str], None]) -> None:
    async with AppServerClient(url, client_name="demo-human") as human:
        started = await human.request("thread/start", {"cwd": str(project),
                                                       "threadSource": "user"})
        thread_id = started["thread"]["id"]
        result = await say(human, thread_id, HUMAN_TEXT, join_first=False, timeout=60)
        if result.status != "completed":
            raise BridgeError(f"the demo's first turn ended {result.status}: {result.error}")
        echo(f"demo: Codex answered the human: {result.reply!r}")


def _arm_ctrl_c() -> threading.Event:
    """From here on Ctrl-C (or SIGTERM) ends the demo normally, wherever it lands."""
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    return stop
