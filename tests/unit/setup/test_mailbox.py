"""The plugin's mailbox names (per project; per session when the project's name is held by
another live session), decided and read in one place (`codexbridge plugin`, through
setup/mailbox.for_session), and its shell launcher (finds the installed codexbridge,
never one inside the project; reads no claim itself)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codexbridge.host.mailboxes import name_problem
from codexbridge.setup.mailbox import (
    Claim,
    claim,
    claimed,
    decide,
    parse_claim,
    project_mailbox,
    render_claim,
    session_mailbox,
)
from codexbridge.setup.where import plugin_dir

LAUNCHER = os.path.join(plugin_dir(), "bin", "codexbridge-plugin")
SID = "746d1776-8ea2-437e-b6a7-9732a034ca4d"


def test_project_names_are_valid_distinct_and_stable() -> None:
    a, b = project_mailbox("/home/me/a/web"), project_mailbox("/home/me/b/web")
    assert a.startswith("web-") and b.startswith("web-") and a != b
    assert project_mailbox("/home/me/a/web") == a and len(a) == len("web-") + 6
    odd = project_mailbox("/x/My Project (v2)!")
    assert odd.startswith("My-Project--v2-") and name_problem(odd) is None
    long = project_mailbox("/x/" + "y" * 200)
    assert name_problem(long) is None and len(long) <= 47
    assert name_problem(project_mailbox("/")) is None
    assert name_problem(project_mailbox("/x/.rejected")) is None
    per_session = session_mailbox(long, SID)
    assert per_session.endswith("-746d1776") and name_problem(per_session) is None


def test_decide_shares_nothing_by_accident() -> None:
    base = "web-abc123"
    assert decide(base, "s1", [], {}) == base
    live_other = [Claim("s0", base, 10)]
    assert decide(base, "s1", live_other, {10: True}) == "web-abc123-s1"
    assert decide(base, "s1", live_other, {10: False}) == base  # the old session is gone
    mine = [Claim("s1", "web-abc123-s1", 11)]
    assert decide(base, "s1", mine, {11: True}) == "web-abc123-s1"  # stable
    # resumed, but a live other session took our name meanwhile
    both = [Claim("s1", base, 11), Claim("s2", base, 12)]
    assert decide(base, "s1", both, {11: False, 12: True}) == "web-abc123-s1"


def test_claim_text_round_trip() -> None:
    text = render_claim("web-abc123", 42, "/p")
    assert parse_claim("s", text) == Claim("s", "web-abc123", 42)
    assert parse_claim("s", render_claim("n", None, "/p")) == Claim("s", "n", None)
    assert parse_claim("s", "") is None


def test_claim_on_disk_keeps_a_sessions_name(tmp_path: Path) -> None:
    inbox, project = str(tmp_path / "inbox"), str(tmp_path / "proj")
    os.makedirs(project)
    first = claim(inbox, project, SID, os.getpid())  # a live "Claude"
    assert first == project_mailbox(os.path.realpath(project))
    assert claim(inbox, project, SID, os.getpid()) == first
    other = claim(inbox, project, "0123abcd-0000", os.getpid())
    assert other == f"{first}-0123abcd"
    with open(os.path.join(inbox, ".claims", SID), encoding="utf-8") as fh:
        assert fh.readline().strip() == first
    assert claim(inbox, project, "", None) == first  # no session: no claim written
    assert claim(inbox, project, "../etc", None) == first
    assert sorted(os.listdir(os.path.join(inbox, ".claims"))) == [
        ".lock", "0123abcd-0000", SID]


def _bin(d: Path, name: str, body: str) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(0o755)
    return p


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", LAUNCHER, *args], env=env, capture_output=True, text=True,
                          timeout=30, check=False)


def test_launcher_finds_the_installed_command_never_the_projects(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    _bin(project / ".venv" / "bin", "codexbridge", 'echo PROJECT "$@"\n')
    _bin(tmp_path / "installed", "codexbridge", 'echo INSTALLED "$@"\n')
    env = {"PATH": f"{project}/.venv/bin:{tmp_path}/installed:/usr/bin:/bin",
           "HOME": str(tmp_path), "CLAUDE_PROJECT_DIR": str(project),
           "CODEX_BRIDGE_MAILBOX": "web"}
    done = run(["hook"], env)
    assert done.stdout == "INSTALLED plugin hook\n"
    assert run(["hook", "start"], env).stdout == "INSTALLED plugin hook start\n"
    assert run(["mcp"], env).stdout == "INSTALLED mcp --role claude\n"
    assert run(["watch"], env).stdout == "INSTALLED plugin watch\n"
    assert run(["name"], env).stdout == "INSTALLED plugin name\n"
    explicit = _bin(tmp_path / "x", "cb", 'echo EXPLICIT "$@"\n')
    assert run(["hook"], {**env, "CODEX_BRIDGE_BIN": str(explicit)}).stdout.startswith(
        "EXPLICIT")


def test_launcher_without_codexbridge_never_fails_a_hook(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    hook = run(["hook"], env)
    assert hook.returncode == 0 and "pipx install" in hook.stderr
    assert run(["watch"], env).returncode == 0
    assert run(["mcp"], env).returncode == 10
    bad = run(["hook"], {**env, "CODEX_BRIDGE_BIN": str(tmp_path / "missing")})
    assert bad.returncode == 0 and "CODEX_BRIDGE_BIN" in bad.stderr
    assert run(["nonsense"], env).returncode == 2


def plugin(*args: str, env: dict[str, str]) -> str:
    """`codexbridge plugin ARGS` (what the launcher runs): its stdout."""
    done = subprocess.run([sys.executable, "-m", "codexbridge", "plugin", *args],
                          env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_session_mailbox_is_read_from_its_claim_and_decided_again_at_start(
        tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    env = {"CODEX_BRIDGE_HOME": str(tmp_path / "state"), "CLAUDE_CODE_SESSION_ID": SID,
           "CLAUDE_PROJECT_DIR": str(project)}
    decided = project_mailbox(os.path.realpath(project))
    assert plugin("name", env=env) == decided + "\n"  # no claim yet: decided, claimed
    claims = tmp_path / "state" / "inbox" / ".claims"
    (claims / SID).write_text("claimed-name\n123\n/p\n")
    assert plugin("name", env=env) == "claimed-name\n"  # read, not decided again
    assert claimed(str(tmp_path / "state" / "inbox"), SID) == "claimed-name"
    hooked = subprocess.run([sys.executable, "-m", "codexbridge", "plugin", "hook"],
                            input='{"hook_event_name": "Stop"}', text=True,
                            env={**os.environ, **env}, capture_output=True, timeout=60)
    assert hooked.returncode == 0 and hooked.stdout == ""
    assert (tmp_path / "state" / "inbox" / "claimed-name.session.json").exists()
    # at SessionStart the name is decided again: a resumed session whose name another
    # live session (this test's process) took meanwhile gets another
    (claims / "0123abcd-0000").write_text(f"claimed-name\n{os.getpid()}\n/p\n")
    assert plugin("name", env=env) == "claimed-name\n"  # a stop does not decide
    plugin("hook", "start", env=env)
    assert claimed(str(tmp_path / "state" / "inbox"), SID) == decided
    # a session id that is not one names no file; a chosen name overrides it all
    assert claimed(str(tmp_path / "state" / "inbox"), "../../x") is None
    assert plugin("name", env={**env, "CODEX_BRIDGE_MAILBOX": "mine"}) == "mine\n"


@pytest.mark.parametrize("path", ["hooks/hooks.json", ".claude-plugin/plugin.json",
                                  ".claude-plugin/marketplace.json"])
def test_plugin_files_are_json(path: str) -> None:
    import json

    with open(os.path.join(plugin_dir(), path), encoding="utf-8") as fh:
        json.load(fh)
