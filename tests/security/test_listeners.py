"""Threat: another local user drives Codex, or reads and forges Claude's mail, through a
listener codexbridge opened.

Loopback is not a boundary on a shared machine: any uid can connect to 127.0.0.1. An
app-server that lets a client in can have its threads read, turns started and its own
command approvals answered (the issue's reproduction ran `id` as the serving user); the
role-codex MCP server over HTTP reads and writes every mailbox (mail shown as "from
codex"). So no listener is opened without authentication, whatever its address:

* `codexbridge serve` at its defaults listens on a unix socket inside a 0700 directory of
  ours: the file system is the authentication, nobody else can even connect;
* asked for TCP (`--host`/`--port`, or `--tls-cert`), every listener — codex's own and the
  TLS relay in front of it — wants a capability token: generated (strong, into the 0600
  ws-token file our own clients read) when none is given, and a weak given one refused;
* `mcp --role codex --http` refuses to start without a bearer token, at any address.

The attacker is a second uid with the standard library only (tests/support/
attack_clients.py); our own client, the same user, works at defaults.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from codexbridge.host.appserver import free_port
from tests.support.attack_clients import APP_SERVER_PROBE, MCP_PROBE
from tests.support.cli import run_cli
from tests.support.mock_codex import MockResponsesServer
from tests.support.other_user import OtherUser

STRONG = "cb-listeners-0123456789abcdef"


@pytest.fixture
def serve_env(codex_bin: str, codex_env: dict[str, str], _isolated_state: Path,
              mock_model: MockResponsesServer) -> dict[str, str]:
    return {**codex_env, "CODEX_BRIDGE_HOME": str(_isolated_state),
            "CODEX_BRIDGE_CODEX_BIN": codex_bin,
            "CODEX_BRIDGE_CHILD_ENV": "MOCK_API_KEY, NO_PROXY",
            "PYTHONPATH": os.pathsep.join(sys.path)}


class Serve:
    """`codexbridge serve ARGS` until stopped; `record` once it listens."""

    def __init__(self, env: dict[str, str], home: Path, *args: str) -> None:
        self.home = home
        self.proc = subprocess.Popen([sys.executable, "-m", "codexbridge", "serve", *args],
                                     env=env, text=True, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, start_new_session=True)

    def record(self, timeout: float = 60) -> dict[str, object]:
        path = self.home / "bridge.json"
        deadline = time.monotonic() + timeout
        while not path.exists():
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited {self.proc.returncode}: "
                                     f"{self.proc.stderr.read() if self.proc.stderr else ''}")
            assert time.monotonic() < deadline, "bridge.json never appeared"
            time.sleep(0.05)
        data = json.loads(path.read_text(encoding="utf-8"))
        assert isinstance(data, dict)
        return data

    def stop(self) -> str:
        """Stop it; what it printed on stdout."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        out, _ = self.proc.communicate(timeout=30)
        return out


@pytest.fixture
def serves(serve_env: dict[str, str], _isolated_state: Path) -> Iterator[list[Serve]]:
    started: list[Serve] = []
    yield started
    for serve in started:
        if serve.proc.poll() is None:
            serve.stop()


def probe(attacker: OtherUser, url: str, token: str = "") -> dict[str, object]:
    done = attacker.run_python(APP_SERVER_PROBE, url, *([token] if token else []))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert isinstance(answer, dict)
    return answer


def shut_out(answer: dict[str, object]) -> bool:
    """The probe could not connect, or was refused at the handshake (401)."""
    return answer["stage"] == "connect" or (
        answer["stage"] == "handshake" and " 401 " in f"{answer.get('status')} ")


def test_serve_at_its_defaults_is_closed_to_another_user(
        serve_env: dict[str, str], workdir: Path, _isolated_state: Path,
        serves: list[Serve], attacker: OtherUser) -> None:
    serve = Serve(serve_env, _isolated_state, "--cwd", str(workdir))
    serves.append(serve)
    url = str(serve.record()["url"])
    got = probe(attacker, url)
    assert shut_out(got), f"another user got into serve's app-server at {url}: {got}"
    if url.startswith("unix://"):
        # codex binds the socket in a 0700 directory of its own and links it from ours:
        # the real path refuses the attacker too
        real = os.path.realpath(url[len("unix://"):])
        assert probe(attacker, f"unix://{real}")["stage"] == "connect"
        parent = Path(url[len("unix://"):]).parent
        st = parent.stat()
        assert st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700
    # our own client, the same user, at defaults
    listed = run_cli("talk", "list", "--json", env=serve_env)
    assert listed.code == 0, listed.err
    out = serve.stop()
    line = next(x for x in out.splitlines() if "codex --remote" in x)
    assert line.strip() == f"codex --remote {url} -C {workdir.resolve()}"


def test_serve_on_tcp_wants_the_token_it_generated(
        serve_env: dict[str, str], workdir: Path, _isolated_state: Path,
        serves: list[Serve], attacker: OtherUser) -> None:
    serve = Serve(serve_env, _isolated_state, "--cwd", str(workdir), "--port", "0")
    serves.append(serve)
    record = serve.record()
    url = str(record["url"])
    assert url.startswith("ws://127.0.0.1:")
    assert shut_out(probe(attacker, url)), "another user got in without a token"
    assert shut_out(probe(attacker, url, "a-guess-0123456789abcdef"))
    token_file = Path(str(record["token_file"]))
    st = token_file.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()
    token = token_file.read_text(encoding="utf-8").strip()
    assert len(token) >= 32
    # our own clients read the token file bridge.json names
    listed = run_cli("talk", "list", "--json", env=serve_env)
    assert listed.code == 0, listed.err
    out = serve.stop()
    assert (f"CODEX_BRIDGE_TOKEN=$(cat {token_file}) codex --remote {url} -C "
            f"{workdir.resolve()} --remote-auth-token-env CODEX_BRIDGE_TOKEN") in out


def test_serve_over_tls_wants_the_token_on_both_listeners(
        serve_env: dict[str, str], workdir: Path, _isolated_state: Path, tmp_path: Path,
        serves: list[Serve], attacker: OtherUser) -> None:
    from tests.real.test_wss_real import make_certs

    ca, cert, key = make_certs(tmp_path)
    port = free_port()
    serve = Serve({**serve_env, "SSL_CERT_FILE": str(ca)}, _isolated_state, "--cwd",
                  str(workdir), "--port", str(port), "--tls-cert", str(cert),
                  "--tls-key", str(key))
    serves.append(serve)
    record = serve.record()
    public, inner = str(record["public_url"]), str(record["url"])
    assert public == f"wss://127.0.0.1:{port}"
    # the TLS relay, and codex's own loopback listener behind it
    assert shut_out(probe(attacker, public)), "another user got in over wss"
    assert shut_out(probe(attacker, inner)), "another user got into codex behind the relay"
    listed = run_cli("talk", "list", "--json", env={**serve_env, "SSL_CERT_FILE": str(ca)})
    assert listed.code == 0, listed.err


def _refused(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run `serve ARGS`, expecting a refusal before it listens (a run that listens instead
    is stopped and fails the test)."""
    proc = subprocess.Popen([sys.executable, "-m", "codexbridge", "serve", *args], env=env,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        raise AssertionError(f"serve {' '.join(args)} ran instead of refusing: {out}") \
            from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("host", ["0.0.0.0", "127.0.0.1"])
def test_a_weak_token_is_refused(serve_env: dict[str, str], workdir: Path,
                                 host: str) -> None:
    env = {**serve_env, "CODEX_BRIDGE_TOKEN": "x"}
    done = _refused(env, "--cwd", str(workdir), "--host", host, "--port", "0")
    assert done.returncode == 2, done.stderr
    assert "CODEX_BRIDGE_TOKEN is 1 character" in done.stderr
    assert "at least 16" in done.stderr


def test_mcp_over_http_without_a_token_is_refused_even_on_loopback(
        _isolated_state: Path, attacker: OtherUser) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CODEX_BRIDGE_MCP_TOKEN"}
    proc = subprocess.Popen([sys.executable, "-m", "codexbridge", "mcp", "--role", "codex",
                             "--http", "127.0.0.1:0"], env=env, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        found = re.search(r"at (http://\S+)", first)
        if found:  # it serves: show what another user can do with that
            got = attacker.run_python(MCP_PROBE, found.group(1))
            raise AssertionError(f"mcp --http served with no token; another user: "
                                 f"{got.stdout}")
        code = proc.wait(60)
        err = first + proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert code == 2, err
    assert "without a bearer token" in err
    assert "export CODEX_BRIDGE_MCP_TOKEN=$(openssl rand -hex 24)" in err


def test_mcp_over_http_lets_only_the_token_in(_isolated_state: Path,
                                              attacker: OtherUser) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "codexbridge", "mcp", "--role", "codex",
                             "--http", "127.0.0.1:0"],
                            env={**os.environ, "CODEX_BRIDGE_MCP_TOKEN": STRONG}, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stderr is not None
        found = re.search(r"at (http://\S+)", proc.stderr.readline())
        assert found, "mcp --http printed no URL"
        url = found.group(1)
        got = json.loads(attacker.run_python(MCP_PROBE, url).stdout)
        assert got == {"stage": "http", "status": 401}
        wrong = json.loads(attacker.run_python(MCP_PROBE, url, STRONG[:-1] + "!").stdout)
        assert wrong == {"stage": "http", "status": 401}
        mine = subprocess.run([sys.executable, "-c", MCP_PROBE, url, STRONG],
                              capture_output=True, text=True, timeout=60, check=True)
        assert "claude_message_send" in json.loads(mine.stdout)["tools"]
    finally:
        proc.terminate()
        proc.wait(10)


def test_mcp_token_file_open_to_others_is_refused(tmp_path: Path) -> None:
    loose = tmp_path / "token"
    loose.write_text(STRONG + "\n", encoding="utf-8")
    os.chmod(loose, 0o644)
    done = run_cli("mcp", "--role", "codex", "--http", "127.0.0.1:0", "--token-file",
                   str(loose), timeout=60)
    assert done.code == 2, done.err
    assert "readable by other users" in done.err and "chmod 600" in done.err
    assert stat.S_IMODE(loose.stat().st_mode) == 0o644  # not ours to change
