"""doctor's claude-compat rows from what the real Claude Code 2.1.332 hands the hooks:
one `claude -p` (mock Messages API) in a project `install-hook` set up — its SessionStart
and Stop hooks record their input's field names and the session registry's protocol —
then `codexbridge doctor --json` judges all of it OK: the evidence the rows read is
what this Claude Code really sends, not what a unit test assumed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codexbridge.claude.inbox_socket import PEER_PROTOCOL
from codexbridge.hooks.seen import read_seen
from codexbridge.host.binaries import CLAUDE_VERSION
from tests.support.claude_fixtures import ClaudeHarness
from tests.support.cli import run_cli

pytestmark = pytest.mark.real_claude


def test_one_real_session_makes_the_compat_rows_ok(claude: ClaudeHarness,
                                                   claude_project: Path) -> None:
    env = {"HOME": str(claude.home), "CLAUDE_CONFIG_DIR": str(claude.config_dir),
           "CODEX_BRIDGE_CLAUDE_BIN": claude.binary, "CODEX_BRIDGE_URL": ""}
    installed = run_cli("install-hook", "--project", str(claude_project), "--as", "web",
                        env=env)
    assert installed.code == 0, installed.err
    assert read_seen()["exists"] is False  # nothing seen before a session ran the hooks

    run = claude.run_p(claude_project, "hello")
    assert run.returncode == 0, run.stderr
    record = read_seen()["record"]
    assert record is not None
    assert set(record["hooks"]) == {"SessionStart", "Stop"}
    assert record["peer"]["protocol"] == PEER_PROTOCOL
    assert record["peer"]["claude_version"] == CLAUDE_VERSION

    res = run_cli("doctor", "--json", "--project", str(claude_project), env=env, timeout=60)
    assert res.code in (0, 1), res.err
    rows = {c["name"]: c for c in json.loads(res.out)["checks"]}
    assert rows["claude-version"]["status"] == "OK", rows["claude-version"]
    for name in ("claude-compat:peer-protocol", "claude-compat:hook-input",
                 "claude-compat:transcript"):
        assert rows[name]["status"] == "OK", rows[name]
    hooks = rows["claude-compat:hook-input"]["finding"]
    assert "Stop: session_id, transcript_path, cwd" in hooks
    assert "SessionStart: hook_event_name, session_id" in hooks
    assert f"(Claude Code {CLAUDE_VERSION})" in hooks
