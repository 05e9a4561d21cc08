"""`codexbridge demo`: the whole Claude → Codex path, offline, on the embedded mock model.

It starts the offline stack (`mock/stack.py`: the mock Responses API and a real
`codex app-server` in a throw-away directory), opens a user thread with a first turn
(standing in for the human at the TUI — or, with `--tui`, typing it into the real TUI
in tmux), then runs the real `codexbridge talk say` command against that thread and
shows the streamed reply.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import click

from ..error_tables import exit_help
from ..errors import BinaryNotFoundError, ServeError, UsageError
from .output import command

HUMAN_TEXT = "Hi Codex, I am the human watching this TUI."
BRIDGE_TEXT = "Hello from Claude Code through codexbridge: what is 6 x 7?"


@click.command(epilog=exit_help(UsageError, BinaryNotFoundError, ServeError,
                                success="the demo turn went through"))
@click.option("--tui", is_flag=True,
              help="Also open the real Codex TUI in tmux and show the bridge's turn in it; "
                   "keeps running until Ctrl-C so you can attach.")
@click.option("--keep", is_flag=True, help="Keep the app-server running after the demo turn.")
@command
def demo(tui: bool, keep: bool) -> int:
    """Run the whole Claude → Codex path offline on an embedded mock model.

    No account and no network: a mock Responses API on 127.0.0.1 stands in for the
    model, and the real pinned `codex app-server` holds the thread. A first turn stands
    in for the human, then the real `codexbridge talk say` joins the thread and streams
    Codex's reply.
    """
    return run_demo(tui=tui, keep=keep, echo=click.echo)


def _on_screen(viewer: Any, text: str, timeout: float) -> str:
    """The TUI's screen once `text` shows; a clear error (not a traceback) if it never
    does, with the last lines of the screen."""
    try:
        return str(viewer.wait_for_text(text, timeout=timeout))
    except (TimeoutError, RuntimeError) as exc:
        tail = "\n".join(str(exc).splitlines()[-12:])
        raise ServeError(f"the Codex TUI did not show {text!r} within {timeout:g} s "
                         f"(a slow or overloaded machine?); its screen ended:\n{tail}"
                         ) from None


def run_demo(*, tui: bool, keep: bool, echo: Callable[[str], None]) -> int:
    from ..host.binaries import find_codex
    from ..mock.stack import OfflineStack

    codex = find_codex()
    tmux = shutil.which("tmux") if tui else None
    if tui and tmux is None:
        raise UsageError("--tui needs tmux (install it, or run the demo without --tui)")
    stack = OfflineStack(codex)
    viewer = None
    try:
        stack.start()
        echo(f"demo: mock model (no account, loopback only) at {stack.mock.url}")
        echo(f"demo: codex app-server listening on {stack.url} (cwd {stack.workdir})")
        if tui:
            from ..host.tmux_tui import CodexTUI

            viewer = CodexTUI(codex, stack.url, stack.workdir, stack.env,
                              tmux=tmux or "tmux").start()
            viewer.wait_ready()
            echo("demo: the real Codex TUI runs in tmux; the human types the first message")
            viewer.send(HUMAN_TEXT)
            _on_screen(viewer, "MOCK REPLY: " + HUMAN_TEXT[:30], 60)
        else:
            echo(f"demo: the human's first message (standing in for the TUI): {HUMAN_TEXT!r}")
            _thread, reply = asyncio.run(stack.human_thread(HUMAN_TEXT))
            echo(f"demo: Codex answered the human: {reply!r}")
        echo(f"demo: $ codexbridge talk say {BRIDGE_TEXT!r}")
        cli_env = {**os.environ, "CODEX_BRIDGE_URL": stack.url,
                   "CODEX_BRIDGE_HOME": str(stack.base / "bridge-home")}
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
            screen = _on_screen(viewer, "MOCK REPLY: " + BRIDGE_TEXT[:30], 30)
            echo("demo: the TUI now shows the bridge's message and Codex's reply:")
            shown = [line.rstrip() for line in screen.splitlines()
                     if line.lstrip().startswith(("›", "•")) and "Ask Codex" not in line]
            echo("\n".join("    " + line for line in shown))
            where = viewer.server.attach_line() if viewer.server else ""
            echo(f"demo: attach to watch it yourself: {where}")
        if keep or viewer is not None:
            stop = _arm_ctrl_c()
            echo(f"demo: still running; try `CODEX_BRIDGE_URL={stack.url} codexbridge talk "
                 "say \"…\"`. Ctrl-C ends the demo.")
            stop.wait()
        echo("demo: done — the message and the reply went through the real app-server.")
        return 0
    finally:
        if viewer is not None:
            viewer.stop()
        stack.stop()


def _arm_ctrl_c() -> threading.Event:
    """From here on Ctrl-C (or SIGTERM) ends the demo normally, wherever it lands."""
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    return stop
