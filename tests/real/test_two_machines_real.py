"""docs/fitting-in.md, "Two machines", walked as the page says, its commands read from it.

Two hosts, both on this machine: each a network namespace of its own (held by a `sleep`),
joined by a veth pair — their own addresses, no loopback shared between them, no route
off the machine — with its own HOME, CODEX_HOME, state dir and environment.

    codex host  the mock model (its "internet"), `codexbridge setup codex --url
                http://claude-box:8790/mcp`, `codexbridge serve --tls-cert … --host
                0.0.0.0 --port 8443` with CODEX_BRIDGE_TOKEN and CODEX_BRIDGE_MCP_TOKEN
                exported in its shell
    claude host `codexbridge mcp --role codex --http 0.0.0.0:8790`, the real Codex TUI
                attached with the page's `SSL_CERT_FILE=cert.pem codex --remote
                wss://HOST:8443 …` line, and `codexbridge talk send` with the page's
                exports

Forward: the TUI's turn renders, `talk send` on the Claude host gets Codex's answer back
as mail there. Reverse: Codex (on serve's app-server, whose environment serve builds)
calls `claude_message_send` and the mail lands in the Claude host's mailbox; doctor on
the codex host says the app-server has the token its MCP server needs.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from codexbridge.doctor.offline_stack import isolated_env, write_codex_home
from tests.support.binaries import require_codex, require_tmux
from tests.support.other_user import _in_ci
from tests.support.tmux_tui import CodexTUI

from .test_wss_real import make_certs

pytestmark = [pytest.mark.real_codex, pytest.mark.tmux]

DOCS = Path(__file__).resolve().parents[2] / "docs" / "fitting-in.md"
SUBNET = "10.213.7"
CODEX_ADDR, CLAUDE_ADDR = f"{SUBNET}.1", f"{SUBNET}.2"
ASK = 'Allow the codexbridge MCP server to run tool "claude_message_send"'


def section() -> str:
    text = DOCS.read_text(encoding="utf-8")
    start = text.index("## Two machines")
    return text[start:text.index("\n## ", start + 1)]


def page_line(start: str, **values: str) -> str:
    """The first command of the section that begins with `start` (continuation lines
    joined, a trailing `# comment` dropped), each placeholder given in `values` replaced."""
    lines = section().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(start))
    words = []
    for line in lines[at:]:
        words.append(line.rstrip("\\").strip())
        if not line.endswith("\\"):
            break
    command = re.sub(r"\s+#.*$", "", " ".join(words))
    for name, value in values.items():
        command = command.replace(name, value)
    return command


def cli_args(line: str) -> list[str]:
    """`codexbridge ARGS…` → ARGS."""
    words = shlex.split(line)
    assert words[0] == "codexbridge", line
    return words[1:]


def exports(line: str) -> dict[str, str]:
    """`export A=1 B=2` (or leading `A=1 B=2 cmd`) → {A: 1, B: 2}."""
    words = shlex.split(line)
    return dict(w.split("=", 1) for w in words if "=" in w and not w.startswith("-"))


def _need_namespaces() -> None:
    missing = [tool for tool in ("unshare", "nsenter", "ip") if shutil.which(tool) is None]
    why = None
    if os.geteuid() != 0:
        why = "network namespaces need root (CI runs as root)"
    elif missing:
        why = f"{', '.join(missing)} not installed"
    if why:
        if _in_ci():
            pytest.fail(f"CI=true and {why}", pytrace=False)
        pytest.skip(why)


class Host:
    """One machine: a network namespace held by a `sleep`, commands run in it."""

    def __init__(self, name: str, root: Path, addr: str) -> None:
        self.name, self.addr = name, addr
        self.dir = root / name
        for sub in ("home", "codex-home", "work"):
            (self.dir / sub).mkdir(parents=True)
        # as codexbridge makes a state home: it refuses one others may enter
        self.state.mkdir(mode=0o700)
        self.holder = subprocess.Popen(["unshare", "--net", "sleep", "infinity"],
                                       stdin=subprocess.DEVNULL)
        mine = os.stat("/proc/self/ns/net").st_ino
        deadline = time.monotonic() + 10
        while os.stat(f"/proc/{self.holder.pid}/ns/net").st_ino == mine:
            assert time.monotonic() < deadline, "unshare made no network namespace"
            time.sleep(0.01)
        self.procs: list[subprocess.Popen[str]] = []

    @property
    def state(self) -> Path:
        return self.dir / "state"

    def argv(self, *argv: str) -> list[str]:
        return ["nsenter", "-t", str(self.holder.pid), "-n", *argv]

    def ip(self, *args: str) -> None:
        subprocess.run(self.argv("ip", *args), check=True, capture_output=True, timeout=30)

    def env(self, **extra: str) -> dict[str, str]:
        env = isolated_env(self.dir / "codex-home", user_home=self.dir / "home")
        env.update({"CODEX_BRIDGE_HOME": str(self.state), "CODEX_BRIDGE_DAEMON": "off",
                    "PYTHONPATH": os.pathsep.join(sys.path)})
        env.update(extra)
        return env

    def cb(self, args: list[str], env: Mapping[str, str], cwd: Path | None = None,
           timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.argv(sys.executable, "-m", "codexbridge", *args),
                              env=dict(env), cwd=cwd or self.dir / "work", text=True,
                              capture_output=True, timeout=timeout, check=False)

    def start(self, argv: list[str], env: Mapping[str, str], cwd: Path | None = None,
              **kw: object) -> subprocess.Popen[str]:
        proc = subprocess.Popen(self.argv(*argv), env=dict(env), cwd=cwd or self.dir / "work",
                                text=True, start_new_session=True, **kw)  # type: ignore[call-overload]
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                with_group = os.getpgid(proc.pid)
                os.killpg(with_group, signal.SIGINT)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(with_group, signal.SIGKILL)
                    proc.wait(10)
        # the courier a `talk send` started (detached, in this namespace): its lock names it
        try:
            pid = int((self.state / "courier.lock").read_text().strip())
            os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError):
            pass
        self.holder.kill()
        self.holder.wait(10)


class RemoteTUI(CodexTUI):
    """The Codex TUI run on a host: its command entered into that host's namespace."""

    def __init__(self, host: Host, *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self.host = host

    def command(self) -> list[str]:
        return self.host.argv(*super().command())


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[tuple[Host, Host]]:
    _need_namespaces()
    codex_host = Host("codex-box", tmp_path, CODEX_ADDR)
    claude_host: Host | None = None
    try:
        claude_host = Host("claude-box", tmp_path, CLAUDE_ADDR)
        subprocess.run(["ip", "link", "add", "cbcodex", "netns", str(codex_host.holder.pid),
                        "type", "veth", "peer", "name", "cbclaude", "netns",
                        str(claude_host.holder.pid)], check=True, capture_output=True,
                       timeout=30)
        for host, link in ((codex_host, "cbcodex"), (claude_host, "cbclaude")):
            host.ip("link", "set", "lo", "up")
            host.ip("addr", "add", f"{host.addr}/24", "dev", link)
            host.ip("link", "set", link, "up")
        yield codex_host, claude_host
    finally:
        if claude_host is not None:
            claude_host.stop()
        codex_host.stop()


def _openssl_token() -> str:
    line = page_line("export CODEX_BRIDGE_MCP_TOKEN=$(")
    assert "$(openssl rand -hex 24)" in line, line
    return subprocess.run(["openssl", "rand", "-hex", "24"], capture_output=True, text=True,
                          check=True, timeout=30).stdout.strip()


def _first_line(proc: subprocess.Popen[str], pattern: str, timeout: float = 90) -> str:
    """The first stderr line of `proc` matching `pattern` (a readiness line)."""
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            raise AssertionError(f"exited {proc.wait()} before printing {pattern!r}")
        if re.search(pattern, line):
            return line
    raise AssertionError(f"no {pattern!r} within {timeout} s")


def _mails(state: Path, mailbox: str) -> list[dict[str, object]]:
    path = state / "inbox" / f"{mailbox}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _wait(probe: object, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not probe():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_both_directions_across_two_machines_as_the_page_says(
        hosts: tuple[Host, Host]) -> None:
    codex_host, claude_host = hosts
    codex, tmux = require_codex(), require_tmux()
    project = codex_host.dir / "project"
    project.mkdir()

    # the codex host's model: a mock on its own loopback
    mock = codex_host.start([sys.executable, "-m", "tests.support.mock_codex"],
                            codex_host.env(), stdout=subprocess.PIPE)
    assert mock.stdout is not None
    model_url = mock.stdout.readline().strip()
    write_codex_home(codex_host.dir / "codex-home", model_url, [project])
    # the TUI's own CODEX_HOME on the Claude host (the model is the server's business)
    write_codex_home(claude_host.dir / "codex-home", "http://127.0.0.1:9/v1", [project])

    # Reverse, on the Claude machine: the token, then the HTTP MCP server
    mcp_token = _openssl_token()
    claude_env = claude_host.env(CODEX_BRIDGE_MCP_TOKEN=mcp_token)
    mcp_args = cli_args(page_line("codexbridge mcp --role codex --http"))
    mcp = claude_host.start([sys.executable, "-m", "codexbridge", *mcp_args], claude_env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _first_line(mcp, r"serving MCP \(streamable HTTP\) at http://0\.0\.0\.0:8790/mcp")

    # ... and on the Codex machine: setup codex --url, the MCP token in codex's environment
    codex_env = codex_host.env(CODEX_BRIDGE_CODEX_BIN=codex,
                               CODEX_BRIDGE_CHILD_ENV="MOCK_API_KEY")  # SETUP.md: the key
    setup = codex_host.cb(cli_args(page_line("codexbridge setup codex --url",
                                             **{"claude-box": CLAUDE_ADDR})), codex_env)
    assert setup.returncode == 0, setup.stderr
    assert f"http://{CLAUDE_ADDR}:8790/mcp" in \
        (codex_host.dir / "codex-home" / "config.toml").read_text()

    # Forward, on the Codex machine: the certificate, the token, serve
    certs = codex_host.dir / "certs"
    certs.mkdir()
    make_certs(certs, host="codex-box", addr=CODEX_ADDR)
    token = subprocess.run(["openssl", "rand", "-hex", "24"], capture_output=True,
                           text=True, check=True, timeout=30).stdout.strip()
    assert "CODEX_BRIDGE_TOKEN=$(openssl rand -hex 24)" in page_line(
        "export CODEX_BRIDGE_TOKEN=")
    assert page_line("export CODEX_BRIDGE_MCP_TOKEN=…").startswith(
        "export CODEX_BRIDGE_MCP_TOKEN=")
    serve_env = {**codex_env, "CODEX_BRIDGE_TOKEN": token,
                 "CODEX_BRIDGE_MCP_TOKEN": mcp_token}
    serve_args = cli_args(page_line("codexbridge serve --cwd", **{"~/project": str(project)}))
    serve = codex_host.start([sys.executable, "-m", "codexbridge", *serve_args], serve_env,
                             cwd=certs, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    record_file = codex_host.state / "bridge.json"
    _wait(lambda: record_file.exists() or serve.poll() is not None, "serve to listen")
    assert serve.poll() is None, serve.communicate()[1] if serve.stderr else ""
    assert json.loads(record_file.read_text())["public_url"] == "wss://0.0.0.0:8443"

    # the TUI on the Claude machine (cert.pem copied there, the same token exported)
    (claude_host.dir / "work" / "cert.pem").write_bytes((certs / "cert.pem").read_bytes())
    tui_line = page_line("SSL_CERT_FILE=cert.pem codex --remote", HOST=CODEX_ADDR,
                         DIR=str(project))
    tui_words = shlex.split(tui_line)
    set_vars = exports(tui_line.split(" codex ", 1)[0])
    assert set_vars == {"SSL_CERT_FILE": "cert.pem"}
    remote, extra = tui_words[tui_words.index("--remote") + 1], tui_words[
        tui_words.index("--remote-auth-token-env"):]
    assert remote == f"wss://{CODEX_ADDR}:8443"
    tui_env = {**claude_host.env(CODEX_BRIDGE_TOKEN=token),
               "SSL_CERT_FILE": str(claude_host.dir / "work" / "cert.pem")}
    for name in ("CODEX_BRIDGE_HOME", "CODEX_BRIDGE_DAEMON", "PYTHONPATH"):
        tui_env.pop(name)
    with RemoteTUI(claude_host, codex, remote, project, tui_env, tmux=tmux,
                   extra_args=extra) as tui:
        tui.wait_ready(60)
        tui.send("hello from the TUI on the Claude machine")
        tui.wait_for_text("MOCK REPLY: hello from the TUI on the Claude machine", 60)

        # Claude → Codex: on the Claude machine, the page's exports, then talk send
        talk_env = {**claude_env, "CODEX_BRIDGE_TOKEN": token, "CODEX_BRIDGE_MAILBOX": "asker",
                    **exports(page_line("export SSL_CERT_FILE=cert.pem", HOST=CODEX_ADDR))}
        assert talk_env["CODEX_BRIDGE_URL"] == f"wss://{CODEX_ADDR}:8443"
        ask = "Claude asks across machines: review auth.py"
        sent = claude_host.cb(["talk", "send", "--json", ask], talk_env)
        assert sent.returncode == 0, sent.stderr
        delivery = json.loads(sent.stdout)["delivery_id"]
        tui.wait_for_text(f"MOCK REPLY: {ask}", 60)
        done = claude_host.cb(["talk", "status", delivery, "--wait", "60", "--json"],
                              claude_env)
        assert json.loads(done.stdout)["delivery"]["state"] == "delivered", done.stdout
        [reply] = _mails(claude_host.state, "asker")
        assert f"MOCK REPLY: {ask}" in str(reply["text"])

        # Codex → Claude: Codex, on serve's app-server, calls claude_message_send
        tui.send('MCP_CALL: claude_message_send {"text": "from the codex box", '
                 '"mailbox": "web", "new": true}')
        tui.answer(ASK, "Enter")
        _wait(lambda: _mails(claude_host.state, "web"), "the mail on the Claude machine")
        assert [m["text"] for m in _mails(claude_host.state, "web")] == ["from the codex box"]
        assert not (codex_host.state / "inbox" / "web.jsonl").exists()

    # doctor on the Codex machine: the app-server in force has the MCP token
    doctor = codex_host.cb(["doctor", "--json", "--project", str(project)],
                           {**serve_env, "SSL_CERT_FILE": str(certs / "cert.pem")})
    rows = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert rows["codex-mcp-env"]["status"] == "OK", rows["codex-mcp-env"]
