"""The warm start (mcp/warm.py) with real processes: a cold `codexbridge mcp` leaves a warm
server behind, the next start is forked from it and is the same server, in the session's
own environment; it ends with its launcher; changed code sends the next start cold and
the warm server away.

Each test gets its own runtime directory (XDG_RUNTIME_DIR), so it meets only the warm
server it started, and stops it at the end.
"""

from __future__ import annotations

import array
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codexbridge.inbox.location import inbox_dir, mail_path

CODEX_TOOLS = {"bridge_status", "bridge_output_read", "claude_mailboxes_list",
               "claude_mailbox_peek", "claude_message_send", "bridge_handoff"}
COLD_START = 60.0  # s: a cold import on a loaded 2-core box, then the warm server's own


class Session:
    """`codexbridge mcp --role codex` as an agent runs it: JSON-RPC lines on stdio."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "codexbridge", "mcp", "--role", "codex"], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.next_id = 0

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        line = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write((json.dumps(line) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            raw = self.proc.stdout.readline()
            assert raw, f"no answer to {method}: {self.stderr()}"
            answer = json.loads(raw)
            if answer.get("id") == self.next_id:
                assert "result" in answer, answer
                result = answer["result"]
                assert isinstance(result, dict)
                return result

    def start(self) -> set[str]:
        """initialize, initialized, tools/list: the tool names."""
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "test", "version": "0"}})
        assert self.proc.stdin is not None
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        return {t["name"] for t in self.call("tools/list", {})["tools"]}

    def end(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(running)"
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")

    def loaded_the_sdk(self) -> bool:
        """A cold start maps pydantic-core's library; a launcher never imports the SDK."""
        with open(f"/proc/{self.proc.pid}/maps", encoding="utf-8") as fh:
            return "_pydantic_core" in fh.read()


def socket_of(env: dict[str, str]) -> str:
    """Where `python -m codexbridge` started with `env` finds its warm server."""
    code = "from codexbridge.mcp.warm import socket_path; print(socket_path())"
    quiet = {k: v for k, v in env.items() if k != "CB_MARKS"}  # not a session
    return subprocess.run([sys.executable, "-c", code], env=quiet, capture_output=True,
                          text=True, check=True).stdout.strip()


def wait_for(probe: Any, what: str, timeout: float = COLD_START) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def warm_servers(run_dir: str) -> list[int]:
    """Pids of warm servers listening in `run_dir` (their argv names the socket)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if run_dir.encode() in fh.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().split(") ", 1)[1].startswith("Z")
    except OSError:
        return True


@pytest.fixture
def run_dir() -> Iterator[str]:
    """A short runtime directory of this test's own (a socket path has ~104 bytes)."""
    path = tempfile.mkdtemp(prefix="cbw-", dir="/tmp")
    try:
        yield path
    finally:
        for pid in warm_servers(path):
            os.kill(pid, signal.SIGTERM)
        shutil.rmtree(path, ignore_errors=True)


def test_a_warm_server_stands_in_for_the_cold_start(
        run_dir: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {**os.environ, "XDG_RUNTIME_DIR": run_dir, "CODEX_BRIDGE_MCP_WARM": "120"}
    path = socket_of(env)
    first = Session(env)
    assert first.start() == CODEX_TOOLS
    assert first.loaded_the_sdk()  # cold: nothing was there yet
    assert first.end() == 0
    wait_for(lambda: os.path.exists(path), "the warm server to listen")

    # the next start: forked from it, in its own environment (another state home)
    home = tmp_path / "second-home"
    monkeypatch.setenv("CODEX_BRIDGE_HOME", str(home))
    second = Session({**env, "CODEX_BRIDGE_HOME": str(home)})
    assert second.start() == CODEX_TOOLS
    assert not second.loaded_the_sdk()
    sent = second.call("tools/call", {"name": "claude_message_send",
                                      "arguments": {"text": "from a warm start",
                                                    "mailbox": "warm"}})
    assert sent["structuredContent"]["ok"] is True, sent
    [line] = Path(mail_path(inbox_dir(), "warm")).read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["text"] == "from a warm start"

    # Claude Code's stop: SIGINT, SIGTERM 100 ms later. The launcher leaves at once, and
    # with it the worker (its stdout, the agent's pipe, reaches EOF).
    second.proc.send_signal(signal.SIGINT)
    assert second.proc.wait(timeout=5) == 0
    assert second.proc.stdout is not None and second.proc.stdout.read() == b""
    err = second.stderr()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err

    # a request from another environment is refused; the server stays for its own
    assert _raw_request(path, {"ident": "another install", "argv": []}) == {
        "refused": "another interpreter, sys.path or environment"}
    third = Session(env)
    assert third.start() == CODEX_TOOLS and not third.loaded_the_sdk()
    # a hang-up ends the session as it ends a cold one, and only the session
    third.proc.send_signal(signal.SIGHUP)
    assert third.proc.wait(timeout=5) == 128 + signal.SIGHUP
    assert third.proc.stdout is not None and third.proc.stdout.read() == b""
    fourth = Session(env)
    assert fourth.start() == CODEX_TOOLS and not fourth.loaded_the_sdk()
    assert fourth.end() == 0


def _raw_request(path: str, request: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps(request).encode()
    null = os.open(os.devnull, os.O_RDWR)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(10)
            conn.connect(path)
            fds = array.array("i", [null, null, null])
            conn.sendmsg([struct.pack(">I", len(body)) + body],
                         [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds.tobytes())])
            answer: dict[str, Any] = json.loads(conn.makefile("rb").readline())
            return answer
    finally:
        os.close(null)


def test_changed_code_sends_the_next_start_cold_and_the_warm_server_away(
        run_dir: str, tmp_path: Path) -> None:
    """A module the warm server imported (here: a sitecustomize) changes on disk. Also:
    the sitecustomize runs again in a worker under the session's own environment, as a
    cold start would have run it."""
    site = tmp_path / "site"
    site.mkdir()
    custom = site / "sitecustomize.py"
    custom.write_text("import os\nif os.environ.get('CB_MARKS'):\n"
                      "    with open(os.environ['CB_MARKS'], 'a') as fh:\n"
                      "        fh.write(f'{os.getpid()}\\n')\n", encoding="utf-8")
    marks = tmp_path / "marks"
    env = {**os.environ, "XDG_RUNTIME_DIR": run_dir, "CODEX_BRIDGE_MCP_WARM": "120",
           "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "CB_MARKS": str(marks)}
    path = socket_of(env)
    first = Session(env)
    assert first.start() == CODEX_TOOLS and first.end() == 0
    wait_for(lambda: os.path.exists(path), "the warm server to listen")
    [server] = warm_servers(run_dir)

    second = Session(env)
    assert second.start() == CODEX_TOOLS and not second.loaded_the_sdk()
    assert second.end() == 0
    pids = [int(p) for p in marks.read_text(encoding="utf-8").split()]
    # the first start, the second launcher, then its worker — not the warm server
    assert pids[:2] == [first.proc.pid, second.proc.pid] and len(pids) == 3
    assert pids[2] not in (second.proc.pid, server)

    stamp = custom.stat()
    os.utime(custom, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 10**9))
    third = Session(env)
    assert third.start() == CODEX_TOOLS
    assert third.loaded_the_sdk()  # refused: cold
    assert third.end() == 0
    wait_for(lambda: gone(server), "the stale warm server to leave", timeout=10)
