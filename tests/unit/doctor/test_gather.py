"""doctor: gathering facts from files, fake binaries and a closed port (no real binaries);
and that a check which raises becomes a WARN row."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import stat
import sys
from pathlib import Path

import pytest

from codexbridge.doctor import binaries, claude_side, codex_side
from codexbridge.doctor import diagnose as diagnose_mod
from codexbridge.doctor.codex_side import EndpointFacts
from codexbridge.doctor.parse import ListenSchemes
from codexbridge.doctor.report import WARN
from codexbridge.inbox import store
from codexbridge.inbox.lines import new_mail
from codexbridge.messages.listeners import hook_command, record_listener, watch_command


@pytest.fixture(autouse=True)
def _homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never read the real user's ~/.codex or ~/.claude."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)


def script(path: Path, body: str) -> str:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_binary_facts_from_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = script(tmp_path / "codex", 'case "$1" in --version) echo "codex-cli 0.170.1";; '
                  'app-server) echo "      --listen <URL>"; echo "   `ws://IP:PORT`";; esac')
    monkeypatch.setenv("CODEX_BRIDGE_CODEX_BIN", fake)
    facts = binaries.codex()
    assert facts.path == fake and facts.source == "CODEX_BRIDGE_CODEX_BIN"
    assert facts.version == "0.170.1"
    assert facts.listen == ListenSchemes(listen_option=True, ws=True, unix=False)


def test_binary_that_hangs_or_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_BRIDGE_CODEX_BIN", script(tmp_path / "slow", "sleep 5; echo late"))
    facts = binaries.codex(timeout=0.3)
    assert "no answer within 0.3 s" in str(facts.version_error)
    assert facts.help_error
    monkeypatch.setenv("CODEX_BRIDGE_CLAUDE_BIN", script(tmp_path / "bad", "echo nope; exit 3"))
    assert "exit status 3" in str(binaries.claude().version_error)
    monkeypatch.setenv("CODEX_BRIDGE_CLAUDE_BIN", str(tmp_path / "absent"))
    assert binaries.claude().path is None


def test_codex_home_layer_reads_both_files(tmp_path: Path) -> None:
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "hooks.json").write_text(json.dumps({"hooks": {"PermissionRequest": [
        {"hooks": [{"type": "command", "command": "approve-all --token abc"}]}]}}))
    (home / "config.toml").write_text('approvals_reviewer = "auto_review"\n')
    layer = codex_side.codex_home_layer(home, ["yours"])
    assert layer.exists and layer.hooks_json.permission_request_hooks == 1
    assert layer.config.facts.approvals_reviewer == "auto_review"
    assert "abc" not in json.dumps(dataclasses.asdict(layer))
    (home / "hooks.json").write_text("{nope")
    (home / "config.toml").write_text("a = = 1" if sys.version_info >= (3, 11) else "")
    layer = codex_side.codex_home_layer(home, ["yours"])
    assert "not valid JSON" in str(layer.hooks_json.error)
    assert "not valid TOML" in str(layer.config.error)


def test_codex_homes_caller_and_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(mine))
    same = codex_side.codex_homes(EndpointFacts(url="ws://127.0.0.1:1",
                                                codex_home=str(mine)))
    assert len(same) == 1 and "the running app-server uses it" in same[0].used_by
    other = codex_side.codex_homes(EndpointFacts(url="unix:///tmp/s",
                                                 codex_home=str(tmp_path / "srv")))
    assert [layer.suffix for layer in other] == ["", "@server"]
    remote = codex_side.codex_homes(EndpointFacts(url="ws://10.1.2.3:8787",
                                                  codex_home="/elsewhere"))
    assert len(remote) == 1  # another machine's path: not read here
    monkeypatch.delenv("CODEX_HOME")
    [default] = codex_side.codex_homes(EndpointFacts())
    assert default.home == str(Path.home() / ".codex")


def test_project_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": hook_command("web")},
                            {"type": "command", "asyncRewake": True,
                             "command": watch_command("web", 600, "/gone/python")}]}]},
        "env": {"CODEX_BRIDGE_MAX_CHAIN": "2"}}))
    (project / ".claude" / "settings.local.json").write_text("{broken")
    user_dir = tmp_path / "claude-config"
    user_dir.mkdir()
    (user_dir / "settings.json").write_text(json.dumps({"env": {"CODEX_BRIDGE_MAX_CHAIN": "7"}}))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(user_dir))
    facts = claude_side.project(project)
    scopes = {f.scope: f for f in facts.files}
    assert set(scopes) == {"project", "local", "user"}
    hooks = scopes["project"].hooks
    assert [(h.kind, h.mailbox, h.interpreter_ok) for h in hooks] == [
        ("hook", "web", True), ("watch", "web", False)]
    assert "not valid JSON" in str(scopes["local"].error)
    assert claude_side.settings_env(facts) == {"CODEX_BRIDGE_MAX_CHAIN": "2"}  # project wins
    assert claude_side.hooked_mailboxes(facts) == ["web"]


def test_project_without_settings_still_names_the_file(tmp_path: Path) -> None:
    facts = claude_side.project(tmp_path)
    assert [f.path for f in facts.files] == [str(tmp_path / ".claude" / "settings.json")]
    assert facts.files[0].exists is False


def test_mailboxes(tmp_path: Path) -> None:
    inbox = claude_side.mailboxes().inbox_dir
    store.push(inbox, new_mail("hi", to="web", sender="codex"))
    store.push(inbox, new_mail("hi", to="wbe", sender="codex"))
    record_listener(inbox, "web", {"cwd": "/p", "session_id": "s1"}, "hook")
    with open(os.path.join(inbox, "web.rejected.jsonl"), "w") as fh:
        fh.write('{"reason": "not JSON"}\n')
    facts = claude_side.mailboxes()
    got = {b.name: b for b in facts.mailboxes}
    assert got["web"].pending == 1 and got["web"].rejected == 1
    assert (got["web"].listener or {})["session_id"] == "s1"
    assert got["web"].rejected_file.endswith("web.rejected.jsonl")
    assert got["wbe"].listener is None and set(facts.listeners) == {"web"}


def test_serve_facts_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    from codexbridge.host.paths import bridge_file, write_private_json

    assert codex_side.serve().exists is False
    write_private_json(bridge_file(), {"url": "ws://127.0.0.1:1", "pid": 2 ** 22 + 1})
    facts = codex_side.serve()
    assert facts.exists and facts.serve_alive is False
    assert facts.app_server_alive is None


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_endpoint_closed_port_and_none(monkeypatch: pytest.MonkeyPatch) -> None:
    assert codex_side.endpoint(None).url is None
    url = f"ws://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("CODEX_BRIDGE_URL", url)
    facts = codex_side.endpoint(None, timeout=1)
    assert facts.url == url and facts.source == "CODEX_BRIDGE_URL"
    assert facts.kind is codex_side.EndpointKind.ENV
    assert facts.reachable is False and facts.connect_error
    assert "serve` running" not in facts.connect_error  # the row gives the advice
    # a URL that is not one is the user's typo, named (the row is a FAIL saying so)
    assert "Invalid IPv6 URL" in str(codex_side.endpoint("ws://[::1", timeout=1).bad_url)
    assert codex_side.is_local("ws://[::1") is False
    assert codex_side.is_local("ws://localhost:1") and codex_side.is_local("unix:///s")


def test_endpoint_that_never_answers_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as listener:  # accepts TCP (backlog), never speaks WebSocket
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        url = f"ws://127.0.0.1:{listener.getsockname()[1]}"
        facts = codex_side.endpoint(url, timeout=0.5)  # returns while the socket still listens
    assert facts.source == "--url" and facts.reachable is False
    assert "0.5 s" in str(facts.connect_error)


def test_a_check_that_raises_is_a_warn_row(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_: object, **__: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(binaries, "codex", boom)
    monkeypatch.setattr(claude_side, "mailboxes", boom)
    monkeypatch.setattr(diagnose_mod.records, "delivery_rows", boom)
    checks = diagnose_mod.diagnose(tmp_path)
    failed = [c for c in checks if "disk on fire" in c.finding]
    assert {c.name for c in failed} == {"codex", "mailboxes", "deliveries"}
    assert all(c.status == WARN for c in failed)
    assert any(c.name == "max-chain" for c in checks)  # the rest still ran
