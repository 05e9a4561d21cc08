"""`codexbridge doctor` run as a process against the real codex 0.169.0 (and Claude Code
2.1.332 where the hook is concerned), with HOME, CODEX_HOME and CLAUDE_CONFIG_DIR in temp
dirs so no real user file is read."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codexbridge.host.appserver import AppServerProcess as AppServer
from codexbridge.host.appserver import launch
from codexbridge.host.paths import bridge_file, write_private_json
from tests.support.binaries import codex_version
from tests.support.claude_fixtures import ClaudeHarness
from tests.support.cli import CliResult, run_cli
from tests.support.raw_client import RawClient, start_user_thread

pytestmark = pytest.mark.real_codex

CHECK_KEYS = {"name", "status", "finding", "fix", "details"}


@pytest.fixture
def base_env(tmp_path: Path, codex_bin: str, codex_env: dict[str, str]) -> dict[str, str]:
    """The pinned codex, the fixture's CODEX_HOME (hooks off, reviewer user), private HOME."""
    home = tmp_path / "doctor-home"
    home.mkdir()
    return {"HOME": str(home), "CODEX_HOME": codex_env["CODEX_HOME"],
            "CLAUDE_CONFIG_DIR": str(home / ".claude"), "CODEX_BRIDGE_CODEX_BIN": codex_bin,
            "CODEX_BRIDGE_URL": ""}


def doctor(*args: str, env: dict[str, str]) -> tuple[CliResult, dict[str, Any]]:
    res = run_cli("doctor", "--json", *args, env=env, timeout=60)
    assert res.code in (0, 1), res.err
    data = json.loads(res.out)
    assert set(data) == {"ok", "counts", "checks"} and data["ok"] is (res.code == 0)
    for check in data["checks"]:
        assert set(check) == CHECK_KEYS, check
        assert check["status"] in ("OK", "WARN", "FAIL", "INFO")
        assert isinstance(check["finding"], str) and check["finding"]
    return res, data


def rows(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in data["checks"]}


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"ws://127.0.0.1:{s.getsockname()[1]}"


async def test_live_app_server_with_one_user_thread(app_server: AppServer, workdir: Path,
                                                    base_env: dict[str, str]) -> None:
    env = {**base_env, "CODEX_BRIDGE_URL": app_server.url}
    async with RawClient(app_server.url) as tui:
        user = await start_user_thread(tui, workdir, "first message")
        res, data = doctor("--project", str(workdir), env=env)
        got = rows(data)
        assert res.code == 0 and data["ok"] is True
        for name in ("codex", "codex-version", "listen-schemes", "app-server", "threads",
                     "codex-hooks", "approvals-reviewer", "approval-policy", "max-chain"):
            assert got[name]["status"] == "OK", got[name]
        assert got["codex"]["details"]["source"] == "CODEX_BRIDGE_CODEX_BIN"
        assert got["app-server"]["details"]["codex_version"] == codex_version()
        assert got["app-server"]["details"]["codex_home"] == base_env["CODEX_HOME"]
        assert user.thread_id in got["threads"]["finding"]
        # the fixture's CODEX_HOME is both ours and the server's: one set of rows
        assert "the running app-server uses it" in got["codex-hooks"]["finding"]
        assert not [n for n in got if n.endswith("@server")]

        text = run_cli("doctor", "--project", str(workdir), env=env, timeout=60)
        assert text.code == 0
        assert "OK    threads" in text.out and "nothing blocks the bridge" in text.out


def test_stale_bridge_json_is_a_warning(base_env: dict[str, str], workdir: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    write_private_json(bridge_file(), {"url": closed_port_url(), "pid": gone.pid,
                                       "app_server_pid": gone.pid, "cwd": str(workdir)})
    res, data = doctor("--project", str(workdir), env=base_env)
    got = rows(data)
    assert got["bridge-json"]["status"] == "WARN"
    assert "stale bridge.json" in got["bridge-json"]["finding"]
    assert str(bridge_file()) in got["bridge-json"]["fix"]
    assert got["app-server"]["status"] == "WARN"
    assert got["threads"]["status"] == "INFO"
    assert res.code == 0  # nothing configured is a warning, not a failure
    assert bridge_file().exists()  # reported, never removed


def test_nothing_reachable_fails_with_exit_1(base_env: dict[str, str], workdir: Path) -> None:
    url = closed_port_url()
    res, data = doctor("--project", str(workdir), env={**base_env, "CODEX_BRIDGE_URL": url})
    row = rows(data)["app-server"]
    assert res.code == 1 and data["ok"] is False and data["counts"]["FAIL"] >= 1
    assert row["status"] == "FAIL" and url in row["finding"]
    assert "CODEX_BRIDGE_URL" in row["finding"]
    text = run_cli("doctor", "--url", url, "--project", str(workdir), env=base_env)
    assert text.code == 1 and "FAIL  app-server" in text.out and "Traceback" not in text.err


def _divert(home: Path) -> None:
    (home / "hooks.json").write_text(json.dumps({"hooks": {"PermissionRequest": [
        {"matcher": "*", "hooks": [{"type": "command", "command": "approve --key s3cret"}]}]}}))
    config = home / "config.toml"
    text = config.read_text().replace('approvals_reviewer = "user"',
                                      'approvals_reviewer = "auto_review"')
    config.write_text(text.replace("hooks = false\n", ""))


def test_diverters_in_the_app_servers_codex_home(codex_bin: str, codex_home: Path,
                                                 codex_env: dict[str, str], workdir: Path,
                                                 base_env: dict[str, str],
                                                 tmp_path: Path) -> None:
    _divert(codex_home)
    mine = tmp_path / "my-codex-home"  # the caller's own CODEX_HOME is clean
    mine.mkdir()
    server = launch(codex_bin, workdir, codex_env,
                              stderr_path=tmp_path / "diverted.stderr")
    try:
        env = {**base_env, "CODEX_HOME": str(mine), "CODEX_BRIDGE_URL": server.url}
        res, data = doctor("--project", str(workdir), env=env)
    finally:
        server.stop()
    got = rows(data)
    assert got["codex-hooks"]["status"] == "OK"
    assert got["approvals-reviewer"]["status"] == "OK"
    hooks, reviewer = got["codex-hooks@server"], got["approvals-reviewer@server"]
    assert hooks["status"] == "WARN" and str(codex_home / "hooks.json") in hooks["finding"]
    assert "--approvals tui" in hooks["finding"]
    assert reviewer["status"] == "WARN" and "auto_review" in reviewer["finding"]
    assert "s3cret" not in res.out
    assert res.code == 0


def test_diverters_in_the_callers_codex_home(codex_home: Path, base_env: dict[str, str],
                                             workdir: Path) -> None:
    _divert(codex_home)
    _, data = doctor("--project", str(workdir), env=base_env)
    got = rows(data)
    assert got["codex-hooks"]["status"] == "WARN"
    assert got["approvals-reviewer"]["status"] == "WARN"
    assert "serve would start codex with it" in got["codex-hooks"]["finding"]


def test_project_hook_and_its_listener(claude: ClaudeHarness, workdir: Path,
                                       base_env: dict[str, str]) -> None:
    claude_project = workdir  # (the claude_project fixture would take the same path)
    installed = run_cli("install-hook", "--project", str(claude_project), "--as", "web",
                        env=base_env)
    assert installed.code == 0, installed.err
    assert run_cli("inbox", "push", "--to", "wbe", "typo mail", env=base_env).code == 0
    _, before = doctor("--project", str(claude_project), env=base_env)
    hook = rows(before)["claude-hook"]
    assert hook["status"] == "OK" and '"web"' in hook["finding"]
    assert "no session has run it yet" in hook["finding"]
    assert rows(before)["mailbox:wbe"]["status"] == "WARN"

    run = claude.run_p(claude_project, "hello")  # the Stop hook runs and registers "web"
    assert run.returncode == 0, run.stderr
    _, after = doctor("--project", str(claude_project), env=base_env)
    got = rows(after)
    assert "a session last ran it" in got["claude-hook"]["finding"]
    assert got["mailbox:web"]["status"] == "OK"
    assert str(claude_project) in got["mailbox:web"]["finding"]
    typo = got["mailbox:wbe"]
    assert typo["status"] == "WARN" and 'did you mean "web"' in typo["finding"]


def test_invalid_settings_json_is_a_warning(base_env: dict[str, str], workdir: Path) -> None:
    settings = workdir / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"hooks": {"Stop": []},}')
    _, data = doctor("--project", str(workdir), env=base_env)
    row = rows(data)["claude-settings"]
    assert row["status"] == "WARN" and str(settings) in row["finding"]
    assert "silently under -p" in row["finding"]
    assert settings.read_text() == '{"hooks": {"Stop": []},}'  # never rewritten


def test_help_documents_exit_codes_and_bad_project(base_env: dict[str, str],
                                                   tmp_path: Path) -> None:
    res = run_cli("doctor", "--help", env=base_env)
    assert res.code == 0 and "at least one FAIL row" in res.out
    assert "doctor" in run_cli("--help", env=base_env).out
    bad = run_cli("doctor", "--project", str(tmp_path / "missing"), env=base_env)
    assert bad.code == 2 and "--project" in bad.err
