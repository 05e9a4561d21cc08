"""The quick start (mcp/startup_cache.py) with real processes: a first `codexbridge mcp`
records its start-up; the next one answers it from the record — the same bytes, without
the SDK — then hands the session to the SDK at the first tool call; changed code or
settings send the next start cold again.

Each test gets its own runtime directory (XDG_RUNTIME_DIR), so it meets only its own record.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox.location import mail_path

CODEX_TOOLS = {"bridge_status", "bridge_output_read", "claude_mailboxes_list",
               "claude_mailbox_peek", "claude_message_send", "bridge_handoff"}


class Session:
    """`codexbridge mcp --role codex` as an agent runs it: JSON-RPC lines on stdio."""

    def __init__(self, env: dict[str, str], *, cwd: str | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "codexbridge", "mcp", "--role", "codex"], env=env,
            cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.next_id = 0
        self.lines: list[bytes] = []  # every line the server wrote

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        line = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write((json.dumps(line) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            raw = self.proc.stdout.readline()
            assert raw, f"no answer to {method}: {self.stderr()}"
            self.lines.append(raw)
            answer = json.loads(raw)
            if answer.get("id") == self.next_id:
                assert "result" in answer, answer
                result = answer["result"]
                assert isinstance(result, dict)
                return result

    def initialize(self) -> None:
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "test", "version": "0"}})
        assert self.proc.stdin is not None
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def tools(self) -> set[str]:
        return {t["name"] for t in self.call("tools/list", {})["tools"]}

    def start(self) -> set[str]:
        self.initialize()
        return self.tools()

    def end(self) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.lines += self.proc.stdout.readlines()
        return self.proc.wait(timeout=30)

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(running)"
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")

    def loaded_the_sdk(self) -> bool:
        """The SDK maps pydantic-core's library; a start answered from the record has not."""
        with open(f"/proc/{self.proc.pid}/maps", encoding="utf-8") as fh:
            return "_pydantic_core" in fh.read()


@pytest.fixture
def run_dir() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="cbq-", dir="/tmp")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_a_recorded_start_up_stands_in_for_the_cold_one(run_dir: str, tmp_path: Path) -> None:
    env = {**os.environ, "XDG_RUNTIME_DIR": run_dir}
    first = Session(env)
    assert first.start() == CODEX_TOOLS
    assert first.loaded_the_sdk()  # cold: no record yet
    assert first.end() == 0
    assert list(Path(run_dir, "codexbridge").glob("mcp-start-*.json"))

    # the next start, in another directory: answered from the record
    second = Session(env, cwd=str(tmp_path))
    assert second.start() == CODEX_TOOLS
    assert not second.loaded_the_sdk()
    assert second.lines == first.lines  # byte for byte what the SDK said
    # the first tool call hands the session to the SDK: answered once, and it works
    sent = second.call("tools/call", {"name": "claude_message_send",
                                      "arguments": {"text": "from a quick start",
                                                    "mailbox": "quick"}})
    assert sent["structuredContent"]["ok"] is True, sent
    assert second.loaded_the_sdk()
    [line] = Path(mail_path(inbox_dir(), "quick")).read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["text"] == "from a quick start"
    assert second.tools() == CODEX_TOOLS  # (the SDK's own answer now)
    assert second.end() == 0
    ids = [json.loads(raw).get("id") for raw in second.lines]
    assert ids == [1, 2, 3, 4]  # no request answered twice

    # Claude Code's stop: SIGINT, SIGTERM 100 ms later — before the SDK is imported too
    third = Session(env)
    assert third.start() == CODEX_TOOLS and not third.loaded_the_sdk()
    third.proc.send_signal(signal.SIGINT)
    assert third.proc.wait(timeout=5) == 0
    err = third.stderr()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


def test_changed_settings_or_code_start_cold_and_record_again(run_dir: str,
                                                              tmp_path: Path) -> None:
    env = {**os.environ, "XDG_RUNTIME_DIR": run_dir}
    first = Session(env)
    assert first.start() == CODEX_TOOLS and first.end() == 0

    for other in ({"CODEX_BRIDGE_TEXT_MAX": "5000"}, {"CODEX_BRIDGE_HOME": str(tmp_path)}):
        session = Session({**env, **other})  # any CODEX_BRIDGE_* value: not its record
        assert session.start() == CODEX_TOOLS and session.loaded_the_sdk()
        assert session.end() == 0

    # a copy of the package whose source changes between two starts
    copy = tmp_path / "copy"
    shutil.copytree(Path(__file__).resolve().parents[2] / "codexbridge", copy / "codexbridge",
                    ignore=shutil.ignore_patterns("__pycache__"))
    moved = {**env, "PYTHONPATH": str(copy)}
    for expect_cold in (True, False):
        session = Session(moved, cwd=str(copy))
        assert session.start() == CODEX_TOOLS
        assert session.loaded_the_sdk() is expect_cold
        assert session.end() == 0
    errors = copy / "codexbridge" / "errors.py"
    errors.write_text(errors.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    stale = Session(moved, cwd=str(copy))
    assert stale.start() == CODEX_TOOLS and stale.loaded_the_sdk()
    assert stale.end() == 0


def test_the_knob_off_means_no_record(run_dir: str) -> None:
    env = {**os.environ, "XDG_RUNTIME_DIR": run_dir, "CODEX_BRIDGE_MCP_WARM": "0"}
    for _ in range(2):
        session = Session(env)
        assert session.start() == CODEX_TOOLS and session.loaded_the_sdk()
        assert session.end() == 0
    assert not list(Path(run_dir).rglob("mcp-start-*"))
