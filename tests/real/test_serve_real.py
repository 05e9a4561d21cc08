"""`codexbridge serve` with the real codex binary: at its defaults on a private unix
socket, on TCP (`--port`) behind a capability token."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.binaries import codex_version
from tests.support.cli import run_cli
from tests.support.mock_codex import MockResponsesServer
from tests.support.raw_client import RawClient, start_user_thread
from tests.support.tmux_tui import CodexTUI

pytestmark = pytest.mark.real_codex


def _start_serve(workdir: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "codexbridge", "serve", "--cwd",
                             str(workdir), *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_record(home: Path, proc: subprocess.Popen[str], timeout: float = 30) -> dict:
    path = home / "bridge.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return json.loads(path.read_text())
        if proc.poll() is not None:
            raise AssertionError(f"serve exited {proc.returncode}: {proc.stderr.read()}")
        time.sleep(0.05)
    raise AssertionError("bridge.json never appeared")


@pytest.fixture
def serve_env(codex_bin: str, codex_env: dict[str, str], tmp_path: Path,
              _isolated_state: Path) -> dict[str, str]:
    env = dict(codex_env)
    env.update({
        "CODEX_BRIDGE_HOME": str(_isolated_state),
        "CODEX_BRIDGE_CODEX_BIN": codex_bin,
        # the mock provider's key reaches codex only because it is named here
        "CODEX_BRIDGE_CHILD_ENV": "MOCK_API_KEY, NO_PROXY",
        "SECRET_PARENT_TOKEN": "do-not-leak-123",
        "OPENAI_API_KEY": "sk-should-not-leak",
        "HTTPS_PROXY": "http://user:pw@proxy.invalid:3128",
        "PYTHONPATH": os.pathsep.join(sys.path),
    })
    return env


def test_serve_writes_record_keeps_secrets_out_and_cleans_up(
        serve_env: dict[str, str], workdir: Path, _isolated_state: Path,
        mock_model: MockResponsesServer) -> None:
    proc = _start_serve(workdir, serve_env)
    try:
        record = _wait_record(_isolated_state, proc)
        assert record["cwd"] == str(workdir.resolve())
        assert record["codex_version"] == codex_version()
        assert record["pid"] == proc.pid
        # at its defaults: a unix socket in a 0700 directory of ours, no token
        assert record["url"].startswith("unix://") and "token_file" not in record
        sock = Path(record["url"][len("unix://"):])
        assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
        assert len(str(sock).encode()) < 100
        assert set(record) >= {"url", "pid", "cwd", "codex_version", "started_at"}
        assert stat.S_IMODE(_isolated_state.stat().st_mode) == 0o700
        assert stat.S_IMODE((_isolated_state / "bridge.json").stat().st_mode) == 0o600

        child_env = Path(f"/proc/{record['app_server_pid']}/environ").read_bytes()
        names = dict(v.split(b"=", 1) for v in child_env.split(b"\0") if b"=" in v)
        assert b"SECRET_PARENT_TOKEN" not in names
        assert b"OPENAI_API_KEY" not in names
        assert names[b"MOCK_API_KEY"] == b"dummy-key"
        assert names[b"HTTPS_PROXY"] == b"http://proxy.invalid:3128"
        assert b"CODEX_HOME" in names

        # talk finds the app-server through bridge.json alone (no --url, no env URL)
        import asyncio

        async def first_turn() -> None:
            async with RawClient(record["url"]) as peer:
                await start_user_thread(peer, workdir, "hello")

        asyncio.run(first_turn())
        env = {k: v for k, v in serve_env.items() if k != "CODEX_BRIDGE_URL"}
        res = run_cli("talk", "say", "-q", "via bridge.json", env=env)
        assert res.code == 0, res.err
        assert res.out.strip() == "MOCK REPLY: via bridge.json"

        # a second serve on the same state dir is refused
        second = run_cli("serve", "--cwd", str(workdir), env=serve_env)
        assert second.code == 2 and "already running" in second.err
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(20)
    out = proc.stdout.read() if proc.stdout else ""
    assert f"codex --remote {record['url']} -C {workdir.resolve()}" in out
    assert code == 0
    assert not (_isolated_state / "bridge.json").exists()
    assert not Path(f"/proc/{record['app_server_pid']}").exists()


def test_serve_forwards_sigint(serve_env: dict[str, str], workdir: Path,
                               _isolated_state: Path) -> None:
    proc = _start_serve(workdir, serve_env)
    record = _wait_record(_isolated_state, proc)
    proc.send_signal(signal.SIGINT)
    code = proc.wait(20)
    assert not (_isolated_state / "bridge.json").exists()
    assert not Path(f"/proc/{record['app_server_pid']}").exists()
    assert code in (0, 130)


def test_serve_refuses_bad_input(serve_env: dict[str, str], tmp_path: Path) -> None:
    bad = run_cli("serve", "--cwd", str(tmp_path / "missing"), env=serve_env)
    assert bad.code == 2 and "is not a directory" in bad.err
    afile = tmp_path / "file"
    afile.write_text("x")
    assert run_cli("serve", "--cwd", str(afile), env=serve_env).code == 2
    weak = run_cli("serve", "--cwd", str(tmp_path), "--port", "0",
                   env={**serve_env, "CODEX_BRIDGE_TOKEN": "short"})
    assert weak.code == 2 and "CODEX_BRIDGE_TOKEN is 5 characters" in weak.err
    missing = run_cli("serve", "--cwd", str(tmp_path),
                      env={**serve_env, "CODEX_BRIDGE_CODEX_BIN": str(tmp_path / "nocodex")})
    assert missing.code == 10 and "CODEX_BRIDGE_CODEX_BIN" in missing.err


def test_capability_token_is_required_when_configured(
        serve_env: dict[str, str], workdir: Path, _isolated_state: Path,
        mock_model: MockResponsesServer) -> None:
    env = {**serve_env, "CODEX_BRIDGE_TOKEN": "s3cret-capability"}
    proc = _start_serve(workdir, env, "--port", "0")
    try:
        record = _wait_record(_isolated_state, proc)
        token_file = Path(record["token_file"])
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        no_token = {k: v for k, v in serve_env.items() if k != "CODEX_BRIDGE_TOKEN"}
        no_token["CODEX_BRIDGE_URL"] = record["url"]
        no_token["CODEX_BRIDGE_HOME"] = str(_isolated_state / "elsewhere")
        refused = run_cli("talk", "list", env=no_token)
        assert refused.code == 5, refused.err
        # the server runs and refuses us: an authentication failure, not "is it running?"
        assert refused.err.startswith("codexbridge: authentication failed: the app-server "
                                      f"at {record['url']} wants a capability token (HTTP "
                                      "401) and none was sent: set CODEX_BRIDGE_TOKEN"), \
            refused.err
        assert token_file.read_text() == "s3cret-capability"
        wrong = run_cli("talk", "list", env={**no_token, "CODEX_BRIDGE_TOKEN": "wrong"})
        assert wrong.code == 5 and "refused the capability token (HTTP 401)" in wrong.err
        assert "is it running" not in refused.err + wrong.err
        # with the token (read from bridge.json's token file) the same call works
        ok = run_cli("talk", "list", "--json", env=serve_env)
        assert ok.code == 0, ok.err
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)


def test_auth_failure_points_to_child_env(
        serve_env: dict[str, str], workdir: Path, _isolated_state: Path,
        mock_model: MockResponsesServer) -> None:
    """The mock provider's key lives in MOCK_API_KEY; without naming it in
    CODEX_BRIDGE_CHILD_ENV it never reaches codex, and both serve and talk say say so."""
    env = {k: v for k, v in serve_env.items() if k != "CODEX_BRIDGE_CHILD_ENV"}
    proc = _start_serve(workdir, env)
    try:
        record = _wait_record(_isolated_state, proc)
        import asyncio

        async def failed_first_turn() -> None:
            async with RawClient(record["url"]) as peer:
                user = await start_user_thread(peer, workdir, "hello")
                assert user.first_turn.status == "failed"

        asyncio.run(failed_first_turn())
        res = run_cli("talk", "say", "-q", "again", env=env)
        assert res.code == 1, res.err
        assert "Missing environment variable" in res.err
        assert "CODEX_BRIDGE_CHILD_ENV=MOCK_API_KEY" in res.err
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
    err = proc.stderr.read() if proc.stderr else ""
    assert "CODEX_BRIDGE_CHILD_ENV=MOCK_API_KEY" in err


def _wait_new_child(home: Path, proc: subprocess.Popen[str], old: int,
                    timeout: float = 30) -> dict | None:
    """bridge.json once it names an app-server other than `old`; None if serve exited."""
    path = home / "bridge.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return None
        try:
            record = json.loads(path.read_text())
        except FileNotFoundError:  # serve is exiting: the next poll() says so
            continue
        if record["app_server_pid"] != old:
            return record
        time.sleep(0.02)
    raise AssertionError(f"no new app-server after {old} was killed")


def test_a_killed_app_server_is_restarted_on_the_same_url(
        serve_env: dict[str, str], workdir: Path, _isolated_state: Path,
        mock_model: MockResponsesServer) -> None:
    """SIGKILL the child: serve starts a new one on the same URL (bridge.json updated, one
    line on stderr) and a thread started before is resumable; the fourth death within
    60 s ends serve, non-zero, saying why."""
    import asyncio

    proc = _start_serve(workdir, serve_env)
    try:
        record = _wait_record(_isolated_state, proc)

        async def first_turn() -> str:
            async with RawClient(record["url"]) as peer:
                return (await start_user_thread(peer, workdir, "before the kill")).thread_id

        thread_id = asyncio.run(first_turn())
        os.kill(record["app_server_pid"], signal.SIGKILL)
        again = _wait_new_child(_isolated_state, proc, record["app_server_pid"])
        assert again is not None, proc.stderr.read() if proc.stderr else ""
        assert again["url"] == record["url"] and again["app_server_restarts"] == 1
        assert again["pid"] == proc.pid

        async def resumed() -> dict:
            async with RawClient(record["url"]) as peer:
                return await peer.request("thread/resume",
                                          {"threadId": thread_id, "excludeTurns": True})

        assert asyncio.run(resumed())["thread"]["id"] == thread_id
        env = {k: v for k, v in serve_env.items() if k != "CODEX_BRIDGE_URL"}
        said = run_cli("talk", "say", "--thread", thread_id, "-q", "after the restart",
                       env=env)
        assert said.code == 0, said.err
        assert said.out.strip() == "MOCK REPLY: after the restart"

        pid = again["app_server_pid"]
        for _ in range(3):  # restarts 2 and 3, then the fourth death within 60 s
            os.kill(pid, signal.SIGKILL)
            nxt = _wait_new_child(_isolated_state, proc, pid)
            if nxt is None:
                break
            pid = nxt["app_server_pid"]
        code = proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(20)
    err = proc.stderr.read() if proc.stderr else ""
    lines = [line for line in err.splitlines() if line.startswith("codexbridge: the codex")]
    assert lines[0] == (f"codexbridge: the codex app-server (pid {record['app_server_pid']}) "
                        f"was killed by SIGKILL; restarted it on {record['url']} as pid "
                        f"{again['app_server_pid']} (restart 1 of at most 3 within 60 s)")
    assert len(lines) == 4 and "died 4 times within 60 s" in lines[3]
    assert "serve stops" in lines[3]
    assert code == 137
    assert not (_isolated_state / "bridge.json").exists()


def test_serve_restarts_on_the_same_port_after_serving_a_connection(
        serve_env: dict[str, str], workdir: Path, _isolated_state: Path) -> None:
    """codex closes a WebSocket first, so its port sits in TIME_WAIT for ~60 s after a
    client came: a serve restarted at once on that port must not call it "in use"."""
    from codexbridge.host.appserver import free_port

    port = str(free_port())
    argv = [sys.executable, "-m", "codexbridge", "serve", "--cwd", str(workdir), "--port",
            port]
    for attempt in range(2):
        proc = subprocess.Popen(argv, env=serve_env, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        try:
            record = _wait_record(_isolated_state, proc)
            assert record["url"] == f"ws://127.0.0.1:{port}", attempt
            listed = run_cli("talk", "list", "--json", env=serve_env)  # a served connection
            assert listed.code == 0, listed.err
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(20) == 0


class PastedTUI(CodexTUI):
    """The Codex TUI started by the very line serve printed, run by a shell as the user
    pastes it (`codex` found on PATH)."""

    def __init__(self, line: str, *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self.line = line

    def command(self) -> list[str]:
        return self._argv(["/bin/sh", "-c", self.line])


@pytest.mark.tmux
@pytest.mark.parametrize("listen", [(), ("--port", "0")], ids=["defaults", "tcp"])
def test_the_printed_line_attaches_the_tui(
        serve_env: dict[str, str], workdir: Path, _isolated_state: Path, tmp_path: Path,
        codex_bin: str, mock_model: MockResponsesServer, listen: tuple[str, ...]) -> None:
    """What serve prints to paste — at its defaults `codex --remote unix://…`, on TCP with
    the token read from its file — attaches the real TUI, and a turn renders."""
    from tests.support.binaries import require_tmux

    tmux = require_tmux()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "codex").symlink_to(codex_bin)
    proc = _start_serve(workdir, serve_env, *listen)
    try:
        _wait_record(_isolated_state, proc)
        assert proc.stdout is not None
        line = next(x for x in iter(proc.stdout.readline, "") if "codex --remote" in x).strip()
        assert ("CODEX_BRIDGE_TOKEN=$(cat" in line) == bool(listen), line
        env = {k: v for k, v in serve_env.items() if not k.startswith("CODEX_BRIDGE_")}
        env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
        with PastedTUI(line, codex_bin, None, workdir, env, tmux=tmux) as tui:
            tui.wait_ready(60)
            tui.send("hello through the printed line")
            tui.wait_for_text("MOCK REPLY: hello through the printed line", 60)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
