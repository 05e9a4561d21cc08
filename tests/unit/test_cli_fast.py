"""The plugin's hot commands before click (cli/__init__.py): the same answers as the click
commands, without importing click; anything else still goes to click."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codexbridge.cli import _options
from codexbridge.setup.mailbox import project_mailbox

SID = "746d1776-8ea2-437e-b6a7-9732a034ca4d"
PROBE = ("import sys\nfrom codexbridge.cli import main\n"
         "try:\n    main(sys.argv[1:])\nexcept SystemExit as exc:\n    code = exc.code\n"
         "print('CLICK' if 'click' in sys.modules else 'LEAN', code, file=sys.stderr)\n")


def probe(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROBE, *args], env={**os.environ, **(env or {})},
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize(("argv", "parsed"), [
    ([], {}), (["--session", "s", "--project", "p"], {"--session": "s", "--project": "p"}),
    (["--project=p"], {"--project": "p"}), (["--session"], None), (["--bogus", "x"], None),
    (["--session", "a", "--session", "b"], None), (["stray"], None),
])
def test_options_take_only_the_plain_shape(argv: list[str],
                                           parsed: dict[str, str] | None) -> None:
    assert _options(argv, ("--session", "--project")) == parsed


def test_setup_mailbox_claims_without_click(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    done = probe("setup", "mailbox", "--session", SID, "--project", str(project))
    assert done.stdout == project_mailbox(os.path.realpath(project)) + "\n"
    assert done.stderr.split() == ["LEAN", "0"]
    # a second session in the same project, while the first is alive, gets its own name
    other = "0f0e0d0c-8ea2-437e-b6a7-9732a034ca4d"
    alive = {"CLAUDE_PID": str(os.getpid())}
    first = probe("setup", "mailbox", "--session", SID, "--project", str(project), env=alive)
    second = probe("setup", "mailbox", "--session", other, "--project", str(project),
                   env=alive)
    assert first.stdout != second.stdout and second.stdout.startswith(first.stdout.strip())


def test_what_needs_saying_goes_to_click(tmp_path: Path) -> None:
    bad = probe("setup", "mailbox", "--session", SID, "--nonsense", "x")
    assert bad.stderr.split()[-2:] == ["CLICK", "2"] and "No such option" in bad.stderr
    unsafe = probe("setup", "mailbox", "--session", SID, "--project", str(tmp_path),
                   env={"HOME": str(tmp_path), "CODEX_BRIDGE_HOME": str(tmp_path)})
    assert unsafe.stderr.split()[-2:] == ["CLICK", "2"]
    assert ("refusing to use it: CODEX_BRIDGE_HOME resolves to your home directory"
            in unsafe.stderr)
