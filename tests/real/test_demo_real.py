"""The offline demo (`scripts/demo`, which runs `python -m tests.support.demo` from the
checkout) end to end: the pinned codex and Claude Code, set up as README says
in a private HOME, in tmux, against the mock models — both directions, each step
printed; `--tui` keeps both TUIs side by side until Ctrl-C. Either way nothing the demo
started is left behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.binaries import require_claude, require_codex, require_tmux
from tests.support.cli import CliResult

ROOT = Path(__file__).resolve().parents[2]
DEMO = [sys.executable, "-m", "tests.support.demo"]

pytestmark = [pytest.mark.real_codex, pytest.mark.real_claude, pytest.mark.tmux]

STEPS = ("demo: 1/5 set-up as README says: codexbridge setup claude; codexbridge setup codex",
         "demo: 2/5 the two terminals README opens: codex -C ~/project",
         "demo: 3/5 Claude asks Codex (its Bash tool runs codexbridge talk send)",
         "demo: 4/5 Codex asks Claude (its MCP tool claude_message_send, expectReply)",
         "demo: 5/5 where each message went: codexbridge talk status")


def demo_env() -> dict[str, str]:
    require_tmux()
    return {**os.environ, "CODEX_BRIDGE_CODEX_BIN": require_codex(),
            "CODEX_BRIDGE_CLAUDE_BIN": require_claude()}


def run_demo(*args: str, env: dict[str, str], timeout: float = 90.0) -> CliResult:
    """The demo as scripts/demo runs it: a module of the checkout, from its root."""
    done = subprocess.run([*DEMO, *args], cwd=ROOT, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=timeout, check=False)
    return CliResult(done.returncode, done.stdout, done.stderr)


def private_root(out: str) -> Path:
    """The demo's private world (the HOME it prints is <root>/h)."""
    found = re.search(r"a private HOME (/\S+)/h ", out)
    assert found, out
    return Path(found.group(1))


def started_in(root: Path) -> list[str]:
    """Live processes whose environment names the demo's private root (the TUIs, codex's
    daemon, Claude's hooks, the courier, the MCP servers all carry its HOME or PATH)."""
    mark = (str(root) + "/").encode()
    left = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if mark not in (entry / "environ").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue
        if state != "Z":
            left.append(f"{entry.name} {cmd[:160]}")
    return left


def assert_both_directions(out: str) -> None:
    for step in STEPS:
        # the demo's own error (which step, what it waited on) is at the end
        assert step in out, f"{step!r} missing; the demo's output ends:\n{out[-4000:]}"
    lines = out.splitlines()
    # Claude asks Codex: the message and Codex's answer in the Codex TUI, and the
    # answer in what Claude's model got next
    assert any("codex │   Claude asks: which tests cover the auth module?" in x for x in lines)
    assert any("codex │ • MOCK REPLY: Claude asks: which tests" in x for x in lines), out
    assert any(x.strip().startswith("claude │   Reply from Codex (thread") for x in lines), out
    # Codex asks Claude: Claude's answer, then the reply turn in the Codex thread
    rid = re.search(r"Codex's question arrives live, as a new turn \(request (req_\S+)\)", out)
    assert rid, out
    answer = f"CLAUDE ANSWER to {rid.group(1)}"
    assert f"claude │ ● {answer}: Codex asks: is the auth refactor safe to merge?" in out
    assert any(f"reply to {rid.group(1)}" in x and "codex │" in x for x in lines), out
    assert any(f"codex │ • MOCK REPLY: {answer}" in x for x in lines), out
    # talk status: three records (Claude's request, Codex's, the answer back), delivered
    table = [x for x in lines if re.match(r"\s+req_\S+\s+\S+", x)]
    assert len(table) == 3 and all(" delivered " in x for x in table), table
    assert re.search(r"demo: done in \d+ s: .* both delivered, once each\.", out), out


def test_demo_runs_both_directions_offline_and_leaves_nothing_behind() -> None:
    res = run_demo(env=demo_env(), timeout=170)
    assert res.code == 0, res.out + res.err
    assert_both_directions(res.out)
    root = private_root(res.out)
    assert not root.exists()
    assert started_in(root) == []


def test_demo_tui_shows_both_panes_and_ends_cleanly_on_ctrl_c() -> None:
    proc = subprocess.Popen([*DEMO, "--tui"], cwd=ROOT, env=demo_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        # The demo bounds each of its steps itself: it prints this or exits.
        for line in proc.stdout:
            lines.append(line)
            if "Ctrl-C ends the demo" in line:
                break
        out = "".join(lines)
        assert_both_directions(out)
        attach = re.findall(r"both TUIs still run side by side: (tmux -S (\S+) attach -t "
                            r"(\S+))", out)
        assert attach, out
        _, socket, session = attach[-1]
        panes = subprocess.run(["tmux", "-S", socket, "list-panes", "-t", session, "-F",
                                "#{window_index} #{pane_current_command}"],
                               capture_output=True, text=True, check=True, timeout=10)
        shown = sorted(panes.stdout.split("\n")[:-1])
        assert shown == ["0 claude", "0 codex"], panes.stdout  # one window, side by side
        root = private_root(out)
        assert started_in(root) != []
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:  # a failed assertion: let the demo clean up all the same
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    rest = proc.stdout.read()
    assert "stopping both TUIs" in rest and "Traceback" not in rest, rest
    assert not root.exists() and not Path(socket).exists()
    assert started_in(root) == []


def test_a_missing_binary_or_tmux_is_named_with_its_fix() -> None:
    res = run_demo(env={"CODEX_BRIDGE_CLAUDE_BIN": "/nonexistent/claude"})
    assert res.code == 10 and "Traceback" not in res.err, res.err
    assert "CODEX_BRIDGE_CLAUDE_BIN=/nonexistent/claude is not an executable file" in res.err
    no_tmux = str(Path(sys.executable).parent)  # codexbridge's own bin: no tmux there
    res = run_demo(env={"PATH": no_tmux, "CODEX_BRIDGE_CODEX_BIN": require_codex(),
                               "CODEX_BRIDGE_CLAUDE_BIN": require_claude()})
    assert res.code == 2 and "tmux is not on PATH: install it" in res.err, res.err
