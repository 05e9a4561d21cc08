"""The plugin's cost under `claude -p` (issue 16, point 6): Claude waits for every
SessionStart and Stop hook, the asyncRewake watcher included, yet headless a watcher
cannot wake anything — so the launcher starts none, not even Python."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from codexbridge.setup.where import plugin_dir

LAUNCHER = os.path.join(plugin_dir(), "bin", "codexbridge-plugin")
SID = "746d1776-8ea2-437e-b6a7-9732a034ca4d"


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", LAUNCHER, *args], env=env, capture_output=True, text=True,
                          timeout=30, check=False)


def test_no_watcher_under_claude_p_and_one_interactively(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    fake = tmp_path / "bin" / "codexbridge"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    fake.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CODEX_BRIDGE_BIN": str(fake),
           "CODEX_BRIDGE_HOME": str(tmp_path / "state"), "CLAUDE_CODE_SESSION_ID": SID,
           "CLAUDE_PROJECT_DIR": str(tmp_path)}
    for entry in ("sdk-cli", "sdk-py", "sdk-ts"):
        for args in (["watch", "start"], ["watch"]):
            done = run(args, {**env, "CLAUDE_CODE_ENTRYPOINT": entry})
            assert done.returncode == 0 and done.stdout == done.stderr == ""
    assert not calls.exists()
    # the hook still registers the session and delivers mail under -p
    assert run(["hook", "start"], {**env, "CLAUDE_CODE_ENTRYPOINT": "sdk-cli"}).returncode == 0
    assert calls.read_text().splitlines()[-1] == "plugin hook start"
    assert run(["watch", "start"], {**env, "CLAUDE_CODE_ENTRYPOINT": "cli"}).returncode == 0
    assert calls.read_text().splitlines()[-1] == "plugin watch start"
