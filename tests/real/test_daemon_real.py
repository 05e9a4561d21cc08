"""codex's own managed daemon (`codex app-server daemon start`), found by codexbridge with
no `serve`, no `--url` and no `CODEX_BRIDGE_URL`; the real TUI attached to it.

One daemon per module (its first start copies ~404 MB into CODEX_HOME/packages and
takes ~2 s); each test makes its own thread and names it. Teardown stops the daemon and
also its updater (`… daemon pid-update-loop`, which survives `daemon stop`), then
deletes the copy. The daemon, its updater and every codex here get proxy variables
pointing at a closed loopback port: the updater fetches chatgpt.com/codex/install.sh
and analytics go to ab.chatgpt.com (both measured through such a proxy, no DNS); with
the proxy nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import unix_connect

from codexbridge.doctor.offline_stack import isolated_env, write_codex_home
from codexbridge.host import daemon as host_daemon
from codexbridge.host.procs import pid_alive
from tests.support.binaries import codex_version, require_codex, require_tmux
from tests.support.cli import arun_cli, run_cli
from tests.support.mock_codex import MockResponsesServer
from tests.support.raw_client import RawClient, start_user_thread
from tests.support.tmux_tui import CodexTUI

pytestmark = pytest.mark.real_codex

GUARD = {**{k: "http://127.0.0.1:9" for k in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY",
                                               "https_proxy", "http_proxy", "all_proxy")},
         "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


@dataclass
class Daemon:
    codex: str
    home: Path
    url: str
    env: dict[str, str]  # for codex processes (the TUI)
    projects: list[Path]

    def cli_env(self) -> dict[str, str]:
        """For codexbridge commands: this CODEX_HOME, the daemon lookup on, no URL."""
        return {"CODEX_HOME": str(self.home), "CODEX_BRIDGE_DAEMON": "auto", **GUARD}


def _ours(pid: int, home: Path) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return False
    return str(home) in cmdline and "app-server" in cmdline


def _kill_recorded(home: Path, name: str) -> None:
    """The pid in app-server-daemon/NAME (JSON), killed if it is still our process."""
    try:
        pid = json.loads((home / "app-server-daemon" / name).read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return
    if isinstance(pid, int) and pid_alive(pid) and _ours(pid, home):
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while pid_alive(pid) and time.monotonic() < deadline:  # its socket dies with it
            time.sleep(0.02)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    codex = require_codex()
    root = tmp_path_factory.mktemp("daemon")
    # Short: the socket path is <home>/app-server-control/app-server-control.sock and a
    # unix socket path must fit in ~104 bytes.
    home = Path(tempfile.mkdtemp(prefix="cbd-", dir="/tmp"))
    projects = [root / f"p{i}" for i in range(1, 5)]
    for p in projects:
        p.mkdir()
    (root / "home").mkdir()
    mock = MockResponsesServer().start()
    write_codex_home(home, mock.url, projects)
    with open(home / "config.toml", "a", encoding="utf-8") as fh:
        fh.write("\n[analytics]\nenabled = false\n")
    env = {**isolated_env(home, user_home=root / "home"), **GUARD}
    started = time.monotonic()
    done = subprocess.run([codex, "app-server", "daemon", "start"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    took = time.monotonic() - started
    try:
        assert done.returncode == 0, done.stderr
        info = json.loads(done.stdout.strip().splitlines()[-1])
        assert info["status"] == "started" and info["managedCodexVersion"] == codex_version()
        sock = host_daemon.socket_path(home)
        assert info["socketPath"] == str(sock) and host_daemon.listening(sock)
        print(f"\ndaemon start: {took:.2f} s")
        yield Daemon(codex, home, host_daemon.socket_url(sock), env, projects)
    finally:
        # The sockets are symlinks into /tmp/codex-daemon-<uid>/; their targets (and a
        # .lock beside each) stay behind once the updater is killed.
        targets = [os.path.realpath(link) for link in (
            host_daemon.socket_path(home), home / "app-server-daemon" / "daemon-updater.sock")
            if link.is_symlink()]
        subprocess.run([codex, "app-server", "daemon", "stop"], env=env, capture_output=True,
                       timeout=60, check=False)
        _kill_recorded(home, "daemon-updater.pid")
        _kill_recorded(home, "daemon.pid")
        for target in targets:
            if not host_daemon.listening(target):
                for leftover in (target, target + ".lock"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(leftover)
        mock.stop()
        shutil.rmtree(home, ignore_errors=True)


class UnixRawClient(RawClient):
    """The test peer on the daemon's unix socket."""

    async def __aenter__(self) -> UnixRawClient:
        self._ws = await unix_connect(self.url[len("unix://"):], uri="ws://localhost/",
                                      compression=None, max_size=None, ping_interval=None)
        self._reader = asyncio.create_task(self._read_loop())
        await self.initialize()
        return self


async def test_talk_and_the_mcp_server_find_the_daemon_by_themselves(daemon: Daemon) -> None:
    async with UnixRawClient(daemon.url) as peer:
        user = await start_user_thread(peer, daemon.projects[0], "hello daemon")
    env = daemon.cli_env()
    listed = run_cli("talk", "list", "--json", env=env)
    assert listed.code == 0, listed.err
    assert user.thread_id in {t["id"] for t in json.loads(listed.out)["threads"]}
    said = await arun_cli("talk", "say", "--thread", user.thread_id, "via the daemon", env=env)
    assert said.code == 0, said.err
    assert said.out.strip() == "MOCK REPLY: via the daemon"
    assert "using `codexbridge serve`" not in said.err  # one server: nothing to note

    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "codexbridge", "mcp", "--role", "claude"],
                                   env={**os.environ, **env})
    async with Client(params, mode="legacy") as client:
        status = (await client.call_tool("bridge_status", {})).structured_content
        threads = (await client.call_tool("codex_threads_list", {})).structured_content
    assert isinstance(status, dict) and isinstance(threads, dict)
    app = status["data"]["appServer"]
    assert app["url"] == daemon.url and app["reachable"] is True
    assert app["source"] == f"codex daemon ({daemon.home})"
    assert user.thread_id in json.dumps(threads["data"])


class PlainTUI(CodexTUI):
    """`codex -C DIR` with no --remote at all, as a user types it."""

    def command(self) -> list[str]:
        env = {**self.env, "TERM": "xterm-256color"}
        return ["env", "-i", *(f"{k}={v}" for k, v in sorted(env.items())),
                self.codex_bin, "-C", str(self.workdir)]


async def test_the_tui_on_the_daemon_shows_a_talk_say(daemon: Daemon) -> None:
    tmux = require_tmux()
    project = daemon.projects[1]
    line = host_daemon.attach_line(daemon.url, str(project))
    assert line == f"codex --remote {daemon.url} -C {project}"  # doctor's explicit form
    with CodexTUI(daemon.codex, daemon.url, project, daemon.env, tmux=tmux) as tui:
        tui.wait_ready()
        tui.send("hello from the human")
        tui.wait_for_text("MOCK REPLY: hello from the human", timeout=30)
        res = await arun_cli("talk", "say", "--cwd", str(project), "-q",
                             "message from claude via the daemon", env=daemon.cli_env())
        assert res.code == 0, res.err
        screen = tui.wait_for_text("• MOCK REPLY: message from claude via the daemon", 30)
        assert "› message from claude via the daemon" in screen

    # plain `codex` (no --remote) lands on the same daemon while it runs
    plain_project = daemon.projects[2]
    with PlainTUI(daemon.codex, "", plain_project, daemon.env, tmux=tmux) as tui:
        tui.wait_ready()
        tui.send("hello plain codex")
        tui.wait_for_text("MOCK REPLY: hello plain codex", timeout=30)
        listed = json.loads(run_cli("talk", "list", "--json", env=daemon.cli_env()).out)
        assert str(plain_project) in {t.get("cwd") for t in listed["threads"]}


def _serve(env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "codexbridge", "serve",
                             "--cwd", str(cwd)], env={**os.environ, **env}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def _wait_bridge(proc: subprocess.Popen[str], state: Path) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    record_file = state / "bridge.json"
    while not record_file.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
        time.sleep(0.05)
    return json.loads(record_file.read_text())  # type: ignore[no-any-return]


async def test_a_leftover_serve_beside_the_daemon_the_tui_uses(
        daemon: Daemon, _isolated_state: Path) -> None:
    """Two app-servers on one CODEX_HOME: a leftover serve and the daemon holding the
    TUI's thread. talk finds the thread where it is held (codex lets one app-server write
    a thread: through serve, `thread/resume` fails "already has an active writer"), says
    which server it used, and doctor WARNs with the fix."""
    env = {**daemon.cli_env(), "CODEX_BRIDGE_CODEX_BIN": daemon.codex,
           "CODEX_BRIDGE_CHILD_ENV": "MOCK_API_KEY, NO_PROXY"}
    project = daemon.projects[3]
    proc = _serve(env, project)
    try:
        record = _wait_bridge(proc, _isolated_state)
        assert record["codex_home"] == str(daemon.home)
        async with UnixRawClient(daemon.url) as tui:  # the TUI's thread, on the daemon
            held = await start_user_thread(tui, project, "the human's first message")
        tid = held.thread_id

        listed = await arun_cli("talk", "list", "--json", env=env)
        assert listed.code == 0, listed.err
        assert tid in {t["id"] for t in json.loads(listed.out)["threads"]}
        assert f"codexbridge: two app-servers run on one CODEX_HOME ({daemon.home})" in listed.err
        assert f"`codexbridge serve` at {record['url']} holds no user thread" in listed.err
        assert "Using codex's own daemon (it holds the user threads" in listed.err
        assert f"--url {record['url']}" in listed.err
        said = await arun_cli("talk", "say", "--thread", tid, "-q", "to the right one",
                              env=env)
        assert said.code == 0, said.err
        assert said.out.strip() == "MOCK REPLY: to the right one"

        doctor = json.loads((await arun_cli("doctor", "--json", "--project", str(project),
                                            env=env)).out)
        rows = {c["name"]: c for c in doctor["checks"]}
        pick = rows["endpoint-pick"]
        assert pick["status"] == "WARN", pick
        assert pick["finding"].startswith(
            f"two app-servers run on one CODEX_HOME ({daemon.home})")
        assert pick["fix"].startswith("stop the leftover serve") and \
            f"`kill {proc.pid}`" in pick["fix"]

        # serve holds a user thread too: a command naming the daemon's thread still finds
        # the server that holds it (and says so); named to the other server with --url,
        # it is told which one holds it — exit 3, not codex's "active writer" as exit 1
        async with RawClient(record["url"]) as peer:
            await start_user_thread(peer, project, "a thread on serve")
        found = await arun_cli("talk", "say", "--thread", tid, "-q", "found it", env=env)
        assert found.code == 0 and found.out.strip() == "MOCK REPLY: found it", found.err
        assert f"it holds thread {tid}" in found.err
        wrong = await arun_cli("talk", "say", "--thread", tid, "--url", record["url"], "-q",
                               "to the wrong one", env=env)
        assert wrong.code == 3, wrong.err
        assert (f"thread {tid} is not held by the app-server at {record['url']} but by "
                f"codex daemon ({daemon.home}) at {daemon.url}") in wrong.err
        assert f"pass --url {daemon.url}" in wrong.err
        assert "active writer" not in wrong.err
        sent = await arun_cli("talk", "send", "--thread", tid, "--url", record["url"],
                              "--json", "to the wrong one",
                              env={**env, "CODEX_BRIDGE_MAILBOX": "box"})
        assert sent.code == 3 and f"--url {daemon.url}" in sent.err, sent.err
        right = await arun_cli("talk", "say", "--thread", tid, "--url", daemon.url, "-q",
                               "named", env=env)
        assert right.code == 0 and right.out.strip() == "MOCK REPLY: named", right.err
    finally:
        proc.send_signal(signal.SIGINT)
        out, _err = proc.communicate(timeout=30)
    assert f"codex --remote {record['url']} -C {project}" in out
    assert "plain `codex` (without --remote) attaches to codex's own daemon" in out
    assert f"codex's own daemon also runs ({daemon.url}) on this CODEX_HOME" in out


def test_doctor_names_the_daemon_and_the_attach_line(daemon: Daemon) -> None:
    project = daemon.projects[0]
    res = run_cli("doctor", "--json", "--project", str(project), env=daemon.cli_env())
    rows: dict[str, Any] = {c["name"]: c for c in json.loads(res.out)["checks"]}
    assert rows["codex-daemon"]["status"] == "OK"
    assert rows["app-server"]["status"] == "OK"
    assert rows["app-server"]["details"]["source"] == f"codex daemon ({daemon.home})"
    # plain `codex` first (it attaches to the daemon by itself), the explicit form after
    assert rows["tui-attach"]["details"]["line"] == f"codex -C {project}"
    assert rows["tui-attach"]["details"]["explicit"] == \
        f"codex --remote {daemon.url} -C {project}"
    assert "endpoint-pick" not in rows
    text = run_cli("doctor", "--project", str(project), env=daemon.cli_env()).out
    assert f"open the TUI with: codex -C {project} (plain `codex`" in text
