"""The environment that keeps a real Claude Code offline, against our mock Messages API.

Measured (../shared/reference/claude-code.md §2 and the inbox probe): a minimal
environment, `ANTHROPIC_BASE_URL` on loopback, its own `CLAUDE_CONFIG_DIR`, and these
"quiet" variables; without the last one the interactive TUI tries to `git clone` the
official plugin marketplace from github.com. Used by the tests and the bench.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

API_KEY = "sk-ant-codexbridge-test-0123456789abcdef"
QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
}
# Where a process keeps its temp files and sockets (Claude Code's `claude-<uid>`, tmux's
# sockets, codexbridge's runtime dir): the caller's, so a run that points them at its
# own temp dir keeps the real binaries out of the shared /tmp.
TEMP_VARS = ("TMPDIR", "TMUX_TMPDIR", "XDG_RUNTIME_DIR")


def temp_env() -> dict[str, str]:
    """The caller's TEMP_VARS that are set."""
    return {k: os.environ[k] for k in TEMP_VARS if os.environ.get(k)}


def offline_env(home: Path, config_dir: Path, mock_url: str, *, term: str = "dumb",
                extra: dict[str, str] | None = None) -> dict[str, str]:
    """Everything a `claude` process gets: nothing of the caller's environment leaks
    in except CODEX_BRIDGE_HOME (so its hooks use the same state dir) and where temp
    files go (TEMP_VARS)."""
    python_bin = os.path.dirname(sys.executable)
    env = {"PATH": f"{python_bin}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home),
           "TERM": term, "LANG": "C.UTF-8", "ANTHROPIC_BASE_URL": mock_url,
           "ANTHROPIC_API_KEY": API_KEY, "CLAUDE_CONFIG_DIR": str(config_dir), **QUIET,
           **temp_env()}
    if os.environ.get("CODEX_BRIDGE_HOME"):
        env["CODEX_BRIDGE_HOME"] = os.environ["CODEX_BRIDGE_HOME"]
    env.update(extra or {})
    return env


def seed_interactive(config_dir: Path, project: Path, *, merge: bool = False) -> None:
    """`.claude.json` that skips onboarding, the API-key question and the trust dialog
    for `project` (with `merge`, projects already trusted there stay trusted).

    Without CLAUDE_CONFIG_DIR, Claude Code keeps this file in HOME itself (not in
    ~/.claude): pass HOME as `config_dir` then."""
    path = config_dir / ".claude.json"
    data: dict[str, object] = {}
    if merge and path.exists():
        data = json.loads(path.read_text(encoding="utf-8"))
    projects = data.get("projects") if isinstance(data.get("projects"), dict) else {}
    assert isinstance(projects, dict)
    projects[str(project.resolve())] = {"hasTrustDialogAccepted": True}
    data.update({"hasCompletedOnboarding": True,
                 "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
                 "projects": projects})
    config_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
