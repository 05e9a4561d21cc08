"""The plugin's commands before click (cli/__init__.py): the session's mailbox and the hook
without importing click; a problem said as every command says it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from codexbridge.setup.mailbox import project_mailbox

SID = "746d1776-8ea2-437e-b6a7-9732a034ca4d"
PROBE = ("import sys\nfrom codexbridge.cli import main\n"
         "try:\n    main(sys.argv[1:])\nexcept SystemExit as exc:\n    code = exc.code\n"
         "print('CLICK' if 'click' in sys.modules else 'LEAN', code, file=sys.stderr)\n")


def probe(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROBE, *args], env={**os.environ, **(env or {})},
                          capture_output=True, text=True, timeout=60, check=False)


def test_the_plugins_mailbox_is_named_without_click(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    env = {"CLAUDE_CODE_SESSION_ID": SID, "CLAUDE_PROJECT_DIR": str(project)}
    done = probe("plugin", "name", env=env)
    assert done.stdout == project_mailbox(os.path.realpath(project)) + "\n"
    assert done.stderr.split() == ["LEAN", "0"]
    # a second session in the same project, while the first is alive, gets its own name
    other = "0f0e0d0c-8ea2-437e-b6a7-9732a034ca4d"
    alive = {"CLAUDE_PID": str(os.getpid())}
    first = probe("plugin", "hook", "start", env={**env, **alive})
    second = probe("plugin", "name", env={**env, **alive, "CLAUDE_CODE_SESSION_ID": other})
    assert first.stderr.split() == ["LEAN", "0"]
    assert second.stdout.strip() == project_mailbox(os.path.realpath(project)) + "-0f0e0d0c"


def test_what_needs_saying_is_said(tmp_path: Path) -> None:
    bad = probe("plugin", "nonsense")
    assert bad.stderr.split()[-2:] == ["LEAN", "2"] and "usage: codexbridge plugin" in bad.stderr
    home = {"HOME": str(tmp_path), "CODEX_BRIDGE_HOME": str(tmp_path),
            "CLAUDE_CODE_SESSION_ID": SID}
    unsafe = probe("plugin", "name", env=home)
    assert unsafe.stderr.split()[-1] == "2"
    assert ("refusing to use it: CODEX_BRIDGE_HOME resolves to your home directory"
            in unsafe.stderr)
    hooked = probe("plugin", "hook", "start", env=home)  # a hook never fails Claude
    assert hooked.stderr.split() == ["LEAN", "0"] and hooked.stdout == ""
