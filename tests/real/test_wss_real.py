"""`codexbridge serve --tls-cert/--tls-key`: wss:// in front of codex 0.169.0 (which has no
TLS listener). The real TUI attaches with `--remote wss://… --remote-auth-token-env`,
trusting a throwaway CA through `SSL_CERT_FILE`; `talk say --url wss://…` works the same
way; a wrong token is refused with 401 before anything reaches codex.
"""

from __future__ import annotations

import json
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from codexbridge.host.appserver import free_port
from tests.support.binaries import require_tmux
from tests.support.cli import arun_cli, run_cli
from tests.support.mock_codex import MockResponsesServer
from tests.support.tmux_tui import CodexTUI

pytestmark = [pytest.mark.real_codex, pytest.mark.tmux]

TOKEN = "cb-wss-token-0123456789abcdef"


DOCS = Path(__file__).resolve().parents[2] / "docs" / "fitting-in.md"


def documented_cert_command(host: str = "localhost", addr: str = "127.0.0.1") -> list[str]:
    """The self-signed certificate command docs/fitting-in.md gives users, as written
    (its continuation lines joined), for HOST `host` and ADDR `addr`."""
    text = DOCS.read_text(encoding="utf-8")
    start = text.index("openssl req -x509 -newkey")
    lines = []
    for line in text[start:].splitlines():
        lines.append(line.rstrip("\\").strip())
        if not line.endswith("\\"):
            break
    command = " ".join(lines).replace("HOST", host).replace("ADDR", addr)
    return shlex.split(command)


def make_certs(d: Path, host: str = "localhost", addr: str = "127.0.0.1"
               ) -> tuple[Path, Path, Path]:
    """The certificate exactly as the docs tell users to make it (self-signed, CA:FALSE:
    the TUI refuses a CA certificate as a server's own); it is its own trust anchor."""
    openssl = shutil.which("openssl")
    assert openssl, "openssl is needed to make the test certificates"
    argv = documented_cert_command(host, addr)
    assert argv[0] == "openssl" and "basicConstraints=critical,CA:FALSE" in argv, argv
    subprocess.run([openssl, *argv[1:]], cwd=d, check=True, capture_output=True, timeout=60)
    return d / "cert.pem", d / "cert.pem", d / "key.pem"


@pytest.fixture
def wss_serve(tmp_path: Path, codex_bin: str, codex_env: dict[str, str], workdir: Path,
              _isolated_state: Path, mock_model: MockResponsesServer
              ) -> Iterator[tuple[str, dict[str, str]]]:
    ca, cert, key = make_certs(tmp_path)
    port = free_port("127.0.0.1")
    env = {**codex_env, "CODEX_BRIDGE_HOME": str(_isolated_state),
           "CODEX_BRIDGE_CODEX_BIN": codex_bin, "CODEX_BRIDGE_TOKEN": TOKEN,
           "CODEX_BRIDGE_CHILD_ENV": "MOCK_API_KEY, NO_PROXY", "SSL_CERT_FILE": str(ca)}
    proc = subprocess.Popen([sys.executable, "-m", "codexbridge", "serve", "--cwd",
                             str(workdir), "--port", str(port), "--tls-cert", str(cert),
                             "--tls-key", str(key)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    record_file = _isolated_state / "bridge.json"
    deadline = time.monotonic() + 30
    try:
        while not record_file.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
            time.sleep(0.05)
        record = json.loads(record_file.read_text())
        assert record["public_url"] == f"wss://127.0.0.1:{port}"
        assert record["url"].startswith("ws://127.0.0.1:") and record["url"] != f"ws://127.0.0.1:{port}"
        yield record["public_url"], env
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        assert f"SSL_CERT_FILE=<CA file, for a self-signed certificate> CODEX_BRIDGE_TOKEN=" \
               f"$(cat {_isolated_state / 'ws-token'}) codex --remote wss://127.0.0.1:{port}" \
               in out


async def test_the_tui_and_talk_over_wss(wss_serve: tuple[str, dict[str, str]],
                                         codex_bin: str, workdir: Path) -> None:
    url, env = wss_serve
    tui_env = {k: v for k, v in env.items() if not k.startswith("CODEX_BRIDGE_")}
    tui_env["CODEX_BRIDGE_TOKEN"] = TOKEN
    with CodexTUI(codex_bin, url, workdir, tui_env, tmux=require_tmux(),
                  extra_args=["--remote-auth-token-env", "CODEX_BRIDGE_TOKEN"]) as tui:
        tui.wait_ready()
        tui.send("hello over wss")
        tui.wait_for_text("MOCK REPLY: hello over wss", timeout=30)
        said = await arun_cli("talk", "say", "--url", url, "-q", "claude over wss", env=env)
        assert said.code == 0, said.err
        assert said.out.strip() == "MOCK REPLY: claude over wss"
        tui.wait_for_text("• MOCK REPLY: claude over wss", timeout=30)
    wrong = run_cli("talk", "list", "--url", url, env={**env, "CODEX_BRIDGE_TOKEN": "nope"})
    assert wrong.code == 5, wrong.err
    assert wrong.err.startswith(f"codexbridge: authentication failed: the app-server at {url} "
                                "refused the capability token (HTTP 401): set "
                                "CODEX_BRIDGE_TOKEN"), wrong.err
    missing = run_cli("talk", "list", "--url", url, env={**env, "CODEX_BRIDGE_TOKEN": ""})
    assert missing.code == 5 and "none was sent: set CODEX_BRIDGE_TOKEN" in missing.err
    assert "is it running" not in wrong.err + missing.err
    untrusted = run_cli("talk", "list", "--url", url, env={**env, "SSL_CERT_FILE": ""})
    assert untrusted.code == 5 and "CERTIFICATE_VERIFY_FAILED" in untrusted.err


async def test_a_wss_send_handed_to_a_courier_started_without_its_settings(
        wss_serve: tuple[str, dict[str, str]], workdir: Path, _isolated_state: Path) -> None:
    """The courier already runs — started by someone else, in an environment without the
    CA file and the token (a Stop hook, another session) — when `talk send --url
    wss://…` hands it a delivery: it reaches the server with what the delivery carries
    (the sender's token and CA, kept with the record) and delivers Codex's answer."""
    from codexbridge.messages import courier_link
    from tests.support.binaries import wait_flock_held
    from tests.support.raw_client import RawClient, start_user_thread

    url, env = wss_serve
    record = json.loads((_isolated_state / "bridge.json").read_text())
    async with RawClient(record["url"], token=TOKEN) as tui:  # the TUI's first message
        await start_user_thread(tui, workdir, "hello from the TUI")
    bare = {k: v for k, v in env.items() if k not in ("SSL_CERT_FILE", "CODEX_BRIDGE_TOKEN")}
    courier = subprocess.Popen([sys.executable, "-m", "codexbridge.messages.courier"],
                               env={**bare, "CODEX_BRIDGE_COURIER_IDLE": "120"},
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_flock_held(str(_isolated_state / "courier.lock"), 60)
        sent = await arun_cli("talk", "send", "--url", url, "--reply-to", "asker", "--json",
                              "over wss, carried by a courier that has no CA", env=env)
        assert sent.code == 0, sent.err
        delivery = json.loads(sent.out)["delivery_id"]
        assert courier.poll() is None and courier_link.running()  # the same courier
        done = await arun_cli("talk", "status", delivery, "--wait", "60", "--json", env=bare)
        assert done.code == 0, done.err
        final = json.loads(done.out)["delivery"]
        assert final["state"] == "delivered", final
        assert final["reply_preview"] == \
            "MOCK REPLY: over wss, carried by a courier that has no CA"
        # the record names the token's file, never the token itself
        assert TOKEN not in done.out
        token_file = Path(final["app_server_token_file"])
        assert token_file.read_text() == TOKEN and oct(token_file.stat().st_mode)[-3:] == "600"
    finally:
        courier.terminate()
        courier.wait(30)
