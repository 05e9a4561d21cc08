"""Doctor rows for codex's own daemon and the TUI attach line; the "codex not found"
message for an install without a checkout."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from codexbridge.codex.endpoint import EndpointKind
from codexbridge.codex.protocol.generated.results import Thread
from codexbridge.doctor import claude_side, codex_side
from codexbridge.doctor.codex_side import DaemonFacts, EndpointFacts, ServeFacts
from codexbridge.doctor.report import INFO, OK, WARN
from codexbridge.errors import BinaryNotFoundError
from codexbridge.host import binaries
from codexbridge.host.paths import BridgeRecord

SOCK = "unix:///h/app-server-control/app-server-control.sock"
UP = DaemonFacts("/h", "/h/app-server-control/app-server-control.sock", SOCK, True, True)
DOWN = replace(UP, listening=False)
ALIVE = ServeFacts(serve_alive=True)


def test_daemon_row() -> None:
    assert codex_side.daemon_row(UP).status == OK
    down = codex_side.daemon_row(DOWN)
    assert down.status == INFO and "codex app-server daemon start" in str(down.fix)
    off = codex_side.daemon_row(replace(UP, enabled=False))
    assert off.status == INFO and "CODEX_BRIDGE_DAEMON=off" in off.finding


def test_pick_row_only_when_both_run() -> None:
    ep = EndpointFacts(url="ws://127.0.0.1:8787", source="/s/bridge.json")
    [row] = codex_side.pick_row(UP, ALIVE, ep)
    assert row.name == "endpoint-pick" and f"--url {SOCK}" in str(row.fix)
    assert row.status == INFO  # an older serve's record names no CODEX_HOME
    assert codex_side.pick_row(DOWN, ALIVE, ep) == []
    assert codex_side.pick_row(UP, ServeFacts(serve_alive=False), ep) == []
    assert codex_side.pick_row(UP, ServeFacts(), EndpointFacts(url=SOCK)) == []


def test_two_app_servers_on_one_codex_home_is_a_warn_with_the_fix() -> None:
    record = BridgeRecord("ws://127.0.0.1:8787", pid=4242, codex_home="/h")
    serve = ServeFacts(record=record, serve_alive=True)
    tui = Thread(id="t1")
    # the TUI on the daemon, a leftover serve: talk uses the daemon; stop serve
    [row] = codex_side.pick_row(UP, serve, EndpointFacts(url=SOCK, threads=(tui,)))
    assert row.status == WARN
    assert row.finding.startswith("two app-servers run on one CODEX_HOME (/h): "
                                  "`codexbridge serve` (ws://127.0.0.1:8787, pid 4242) and "
                                  f"codex's own daemon ({SOCK})")
    assert "talk and mcp use codex's own daemon (it holds 1 user thread)" in row.finding
    assert row.fix is not None and row.fix.startswith("stop the leftover serve")
    assert "`kill 4242`" in row.fix
    # in use: serve — either may be the leftover: both ways out
    [row] = codex_side.pick_row(UP, serve, EndpointFacts(url=record.url))
    assert row.status == WARN and "codex app-server daemon stop" in str(row.fix)
    assert "`kill 4242`" in str(row.fix)
    # another CODEX_HOME: no writer conflict, only which one is used
    other = ServeFacts(record=replace(record, codex_home="/elsewhere"), serve_alive=True)
    [row] = codex_side.pick_row(UP, other, EndpointFacts(url=SOCK, threads=(tui,)))
    assert row.status == INFO and "--url ws://127.0.0.1:8787" in str(row.fix)


def test_attach_row_leads_with_plain_codex_for_the_daemon() -> None:
    row = codex_side.attach_row(EndpointFacts(url=SOCK, source="codex daemon (/h)",
                                               kind=EndpointKind.DAEMON), "/p", ServeFacts())
    assert row.details["line"] == "codex -C /p"
    assert row.details["explicit"] == f"codex --remote {SOCK} -C /p"
    assert row.finding.startswith("open the TUI with: codex -C /p (plain `codex`")
    record = BridgeRecord("ws://127.0.0.1:9", public_url="wss://h:443")
    row = codex_side.attach_row(EndpointFacts(url="ws://127.0.0.1:9", token=True, source="b",
                                               kind=EndpointKind.URL),
                                 "/p", ServeFacts(record=record))
    assert row.details["line"] == ("CODEX_BRIDGE_TOKEN=<token> codex --remote wss://h:443 "
                                   "-C /p --remote-auth-token-env CODEX_BRIDGE_TOKEN")
    none = codex_side.attach_row(EndpointFacts(), "/p", ServeFacts())
    assert none.status == INFO and "daemon start" in str(none.fix)


def test_no_user_thread_on_the_daemon_says_plain_codex() -> None:
    [row] = codex_side.thread_rows(EndpointFacts(reachable=True, url=SOCK))
    assert row.status == WARN
    assert str(row.fix).startswith("open the Codex TUI with `codex -C DIR` (plain `codex` "
                                   "attaches to codex's own daemon by itself)")
    assert "--remote" not in str(row.fix)


def test_codex_not_found_names_the_npm_command(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_BRIDGE_TOOLS_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CODEX_BRIDGE_CODEX_BIN", raising=False)
    with pytest.raises(BinaryNotFoundError) as info:
        binaries.find_codex()
    assert f"npm install -g @openai/codex@{binaries.CODEX_VERSION}" in info.value.message
    assert info.value.details["install"] == f"npm install -g @openai/codex@{binaries.CODEX_VERSION}"
    monkeypatch.delenv("CODEX_BRIDGE_CLAUDE_BIN", raising=False)
    with pytest.raises(BinaryNotFoundError,
                       match="@anthropic-ai/claude-code@" + re.escape(binaries.CLAUDE_VERSION)):
        binaries.find_claude()


def test_serve_prints_the_attach_line_and_the_daemon_notes() -> None:
    from codexbridge.host.serve import attach_lines, daemon_notes

    assert attach_lines("unix:///run/cb/serve.sock", "/p", None, False) == [
        "codex --remote unix:///run/cb/serve.sock -C /p"]
    assert attach_lines("ws://127.0.0.1:8787", "/p", Path("/s/ws-token"), False) == [
        "CODEX_BRIDGE_TOKEN=$(cat /s/ws-token) codex --remote ws://127.0.0.1:8787 -C /p "
        "--remote-auth-token-env CODEX_BRIDGE_TOKEN"]
    [tls] = attach_lines("wss://h:1", "/p", Path("/s/ws-token"), True)
    assert tls.startswith("SSL_CERT_FILE=") and "--remote-auth-token-env" in tls
    notes = daemon_notes({"CODEX_BRIDGE_DAEMON": "off"})
    assert len(notes) == 1 and "plain `codex`" in notes[0]


def test_plugin_row_reads_what_setup_claude_wrote(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from codexbridge.claude.plugin import plugin_facts
    from codexbridge.setup.claude import setup_claude
    from codexbridge.setup.where import scope_for

    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    row = claude_side.plugin_row(plugin_facts(str(project)))
    assert row.status == INFO and "setup claude" in str(row.fix)
    setup_claude(scope_for("claude", str(project), False))
    facts = plugin_facts(str(project))
    assert facts["enabled_in"] == ["project"] and facts["marketplace_ok"] is True
    assert claude_side.plugin_row(facts).status == OK
    broken = {**facts, "marketplace_ok": False}
    assert claude_side.plugin_row(broken).status == WARN
