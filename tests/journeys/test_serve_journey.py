"""The second way SETUP.md offers: a dedicated `codexbridge serve --cwd ~/project`, the Codex
TUI attached with the `--remote` line serve prints, Claude Code in the project — the same
conversation both ways, and serve's app-server killed mid-turn (serve restarts it; the
courier rejoins and the asking Claude is told what became of its request).

An API-key user names the key for serve's app-server (SETUP.md: CODEX_BRIDGE_CHILD_ENV);
here the key is the mock provider's.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from codexbridge.doctor.offline_stack import MOCK_API_KEY_VAR
from codexbridge.host.procs import pid_alive
from tests.support.binaries import require_claude, require_codex, require_tmux
from tests.support.helpers import wait_until
from tests.support.mock_claude import peer_answer
from tests.support.tmux_tui import CodexTUI
from tests.support.world import World

from .conftest import Journey, fresh_text
from .steps import answered_once, ask_claude, bash

pytestmark = [pytest.mark.real_codex, pytest.mark.real_claude, pytest.mark.tmux]


class Serve:
    """`codexbridge serve --cwd ~/project` in the user's first terminal."""

    def __init__(self, world: World) -> None:
        env = {**world.env, "CODEX_BRIDGE_CHILD_ENV": MOCK_API_KEY_VAR,
               "CODEX_BRIDGE_CODEX_BIN": world.codex_bin}
        self.proc = subprocess.Popen(["codexbridge", "serve", "--cwd",
                                      str(world.projects["project"])],
                                     cwd=world.home, env=env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True)
        self.record_path = world.bridge_home / "bridge.json"
        self.line = self._remote_line()

    def _remote_line(self) -> str:
        """The `codex --remote …` line serve prints once it listens."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            if "codex --remote" in line:
                return line.strip()
        raise AssertionError(f"serve printed no --remote line: {self.proc.stderr.read()}")

    def record(self) -> dict[str, object]:
        data = json.loads(self.record_path.read_text())
        assert isinstance(data, dict)
        return data

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Journey, Serve]]:
    require_tmux()
    world = World(require_codex(), require_claude(), responder=peer_answer).start()
    serve: Serve | None = None
    try:
        world.setup()
        serve = Serve(world)
        url = re.search(r"--remote (\S+)", serve.line)
        assert url is not None, serve.line
        j = Journey(world)
        tui = CodexTUI(world.codex_bin, url.group(1), world.projects["project"], world.env)
        tui.start(world._server())
        world.tuis.append(tui)
        tui.wait_ready(60)
        tui.send("hello from the human in project")
        tui.wait_for_text("MOCK REPLY: hello from the human in project", 60)
        j.codex["project"] = tui
        listed = j.cb_json("talk", "list")
        j.threads["project"] = str(listed["threads"][0]["id"])
        j.open_claude("project")
        yield j, serve
    finally:
        if serve is not None:
            serve.stop()
        world.stop()


def test_both_ways_through_serve(served: tuple[Journey, Serve]) -> None:
    j, _serve = served
    since = j.claude_mark()
    ask = "Claude asks through serve: what does the build print?"
    j.claude["project"].send(bash(f'codexbridge talk send "{ask}"'))
    j.claude_allows()
    j.on_screen(j.codex["project"], f"MOCK REPLY: {ask}")
    got = j.claude_saw(f"MOCK REPLY: {ask}", since)
    assert "Reply from Codex" in fresh_text(got)
    question = "Codex asks through serve: which branch is this?"
    rid = ask_claude(j, question)
    answered_once(j, rid, question)


def test_serves_app_server_killed_mid_turn_claude_is_told(
        served: tuple[Journey, Serve]) -> None:
    j, serve = served
    since = j.claude_mark()
    text = "HOLD:serve-child-dies Claude asks: migrate the schema"
    j.claude["project"].send(bash(f'codexbridge talk send "{text}"'))
    j.claude_allows()
    j.world.codex_mock.wait_held("serve-child-dies", 60)
    rec = wait_until(lambda: [r for r in j.records() if r.get("text_preview") == text
                              and r["state"] == "awaiting-reply"], 30, "the courier to follow",
                     lambda: j.explain("courier following"))[0]
    child = serve.record()["app_server_pid"]
    assert isinstance(child, int)
    os.kill(child, signal.SIGKILL)
    j.world.codex_mock.release("serve-child-dies")
    # serve starts a new app-server on the same address; the courier rejoins, finds the
    # turn codex ended with the old one, and Claude hears it — with no command run
    wait_until(lambda: serve.record().get("app_server_pid") not in (None, child)
               and pid_alive(int(serve.record()["app_server_pid"])), 30,  # type: ignore[arg-type]
               "serve to restart its app-server", lambda: serve.proc.stderr)
    got = j.claude_saw("DELIVERY FAILED", since, 90)
    assert rec["id"] in fresh_text(got) and "went away" in fresh_text(got)
    j.on_screen(j.claude["project"], "DELIVERY FAILED")  # the human sees it too
    assert j.final(str(rec["id"]))["state"] == "failed"
    assert Path(serve.record_path).exists() and serve.proc.poll() is None
