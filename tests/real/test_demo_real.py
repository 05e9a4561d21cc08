"""`codexbridge demo` end to end, on the pinned codex and the embedded mock model."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from tests.support.binaries import require_codex, require_tmux
from tests.support.cli import run_cli

pytestmark = pytest.mark.real_codex


def test_demo_runs_offline() -> None:
    codex = require_codex()
    res = run_cli("demo", env={"CODEX_BRIDGE_CODEX_BIN": codex}, timeout=120)
    assert res.code == 0, res.out + res.err
    reply = "MOCK REPLY: Hello from Claude Code through codexbridge: what is 6 x 7?"
    assert f"talk say printed on stdout: {reply!r}" in res.out
    assert reply in res.err  # streamed live on stderr


@pytest.mark.tmux
def test_demo_tui_shows_the_turn_and_stops_on_ctrl_c() -> None:
    codex = require_codex()
    require_tmux()
    import os

    proc = subprocess.Popen([sys.executable, "-m", "codexbridge", "demo", "--tui"],
                            env={**os.environ, "CODEX_BRIDGE_CODEX_BIN": codex},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "Ctrl-C ends the demo" in line:
            break
    text = "".join(lines)
    assert "• MOCK REPLY: Hello from Claude Code through codexbridge" in text, text
    assert "tmux -S" in text and "attach -t tui" in text
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 0
