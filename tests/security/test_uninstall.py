"""Threat: uninstalling codexbridge leaves it half-there, or breaks the agents it was
plugged into.

`setup claude` and `setup codex` write into files that belong to the user and to the
agents (Claude Code's settings.json, codex's config.toml), and Claude Code itself then
records our marketplace in its own registry. Taking codexbridge out must give those
files back as they were — a hand-formatted settings.json keeps every byte outside our
keys, through setup and through `--remove` — and leave nothing of codexbridge behind:
no key, no backup, no registry entry, no plugin data directory, no record. What remains
is only what Claude Code and codex made for their own use (listed below, each with its
reason) and codexbridge's state home (the user's mail: SETUP.md says how to delete it).

`pipx uninstall` first is the other order a user takes: the command and the plugin go
with the package while the settings still name them. Then Claude Code must stay quiet,
Codex must say what to do (its MCP start-up warning names the fix), and the way back
SETUP.md documents — codexbridge run from the checkout, `setup … --remove` — must take
everything out, with its record or without it (the state home deleted too).

Everything runs in a private HOME with the real Claude Code and codex, offline.
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from codexbridge.host.binaries import pinned_claude, pinned_codex
from tests.support.binaries import require_claude, require_codex
from tests.support.cli import run_cli
from tests.support.pipx_like import PipxInstall, build_wheel, pipx_install
from tests.support.world import World

# A settings.json formatted by hand: aligned values, a compact object and arrays, an
# escaped é, a key before its colon's space. Every byte of it outside our keys stays.
HAND = ('{\n'
        '    "theme":   "dark",\n'
        '    "permissions": { "allow": ["Bash(ls:*)", "Read"], "deny": [] },\n'
        '    "env": {"GREETING": "h\\u00e9llo"},\n'
        '    "model" : "opus"\n'
        '}\n')

# What Claude Code and codex write for their own use, in the HOME, during the walk — and
# why it is theirs, not ours (measured on Claude Code 2.1.332 and codex 0.171.0). A
# pattern ending in "/" is that directory and everything below it.
THEIRS = {
    ".claude.json": "Claude Code's own state (start count, trusted projects), rewritten at "
                    "every start",
    ".claude/backups/": "Claude Code's backups of .claude.json",
    ".claude/.last-cleanup": "Claude Code's throttle marker for its cleanup of old files "
                             "(written at a start when one is due: seen once in a loaded "
                             "run)",
    ".claude/projects/": "the session's transcript",
    ".claude/session-env/": "Claude Code's per-session bookkeeping",
    ".claude/sessions/": "Claude Code's per-session bookkeeping",
    ".claude/plugins": "its plugins dir, made at its first start with no plugin at all …",
    ".claude/plugins/store/": "… for its built-in plugins' store",
    ".claude/plugins/installed_plugins.json": 'its registry of installed plugins, {"version'
                                              '":2,"plugins":{}}: a directory marketplace '
                                              "installs nothing",
    ".claude/plugins/known_marketplaces.json": "its registry of marketplaces: our key is "
                                               "taken out, the file (now {}) is Claude's",
    ".claude/plugins/marketplaces/": "its (empty) checkout dir for git marketplaces",
    ".claude/plugins/data/": "the parent of its per-plugin data dirs (ours is deleted)",
    ".cache": "the cache dir Claude Code made for …",
    ".cache/claude-cli-nodejs/": "… its per-project MCP logs — one names our plugin's "
                                 "server: Claude's log of that session, like the transcript",
    # `codex exec` (the pipx-first walk runs one):
    ".codex/*.sqlite*": "codex's state, log, goal, memory, queue and history databases",
    ".codex/installation_id": "codex's install id",
    ".codex/.sandbox_migration": "codex's sandbox migration marker",
    ".codex/sessions/": "the session's rollout",
    ".codex/skills/": "codex's bundled system skills, unpacked at start",
    ".codex/shell_snapshots/": "codex's shell snapshots",
    ".codex/thread-writer-locks/": "codex's thread locks",
}
PIPX = {".local/": "pipx's own dirs (~/.local/bin, ~/.local/share/pipx/venvs), which "
                   "`pipx uninstall` leaves, empty"}
# codexbridge's state home: what the session's hooks wrote (the session's mailbox
# registration, the fields Claude Code's hook input carried). The user's data — SETUP.md's
# last step deletes it; setup's own record in it must be gone.
STATE_HOME = ".codex-bridge/"

Tree = dict[str, tuple[str, ...]]


def tree(root: Path) -> Tree:
    """Every path under `root`: its kind, mode and content hash (a link: its target)."""
    out: Tree = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            rel = str(path.relative_to(root))
            info = path.lstat()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir", oct(info.st_mode & 0o7777))
            else:
                out[rel] = ("file", oct(info.st_mode & 0o7777),
                            hashlib.sha256(path.read_bytes()).hexdigest())
    return out


def changed(before: Tree, after: Tree) -> list[str]:
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


def owner(path: str, extra: dict[str, str]) -> str | None:
    """Whose `path` is, by the patterns above; None: it must be as it was."""
    for pattern in (*THEIRS, STATE_HOME, *extra):
        tree_of = pattern.endswith("/")
        if fnmatch.fnmatch(path, pattern.rstrip("/")) \
                or (tree_of and fnmatch.fnmatch(path, pattern + "*")):
            return pattern
    return None


def assert_home_as_before(home: Path, before: Tree, settings: str, config: bytes,
                          extra: dict[str, str] | None = None) -> None:
    after = tree(home)
    ours = [p for p in changed(before, after) if owner(p, extra or {}) is None
            and p != ".claude/settings.json"]
    assert ours == [], f"left behind or changed by codexbridge: {ours}"
    assert (home / ".claude" / "settings.json").read_text(encoding="utf-8") == settings
    assert (home / ".codex" / "config.toml").read_bytes() == config
    assert not [p for p in after if ".bak-codexbridge-" in p]
    assert not (home / STATE_HOME / "setup.json").exists()
    assert not (home / ".claude" / "plugins" / "data" / "codexbridge-codexbridge").exists()
    known = home / ".claude" / "plugins" / "known_marketplaces.json"
    assert json.loads(known.read_text(encoding="utf-8")) == {}


def only_inserted(before: str, after: str) -> list[str]:
    """What `after` added to `before`; fails if anything of `before` changed."""
    ops = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
    assert all(tag in ("equal", "insert") for tag, *_ in ops), ops
    return [after[j1:j2] for tag, _, _, j1, j2 in ops if tag == "insert"]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    require_codex()
    require_claude()
    world = World(str(pinned_codex()), str(pinned_claude()), base=tmp_path / "w").start()
    try:
        yield world
    finally:
        world.stop()


def claude_p(world: World, env: dict[str, str] | None = None
             ) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`claude -p` in ~/project, as the user runs it; and the plugins it loaded."""
    proc = world.run(world.claude_bin, "-p", "hi", "--output-format", "stream-json",
                     "--verbose", cwd=world.projects["project"], timeout=120, extra_env=env)
    plugins: list[str] = []
    for line in proc.stdout.splitlines():
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("type") == "system" and event.get("subtype") == "init":
            plugins = [f"{p['name']}:{p['path']}" for p in event["plugins"]]
    return proc, plugins


def ours(plugins: list[str]) -> list[str]:
    return [p for p in plugins if p.startswith("codexbridge:")]


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_a_hand_formatted_settings_file_keeps_its_bytes(tmp_path: Path) -> None:
    cfg = tmp_path / "claude"
    cfg.mkdir()
    settings = cfg / "settings.json"
    settings.write_text(HAND, encoding="utf-8")
    env = {"CLAUDE_CONFIG_DIR": str(cfg)}
    ok_ = run_cli("setup", "claude", env=env)
    assert ok_.code == 0, ok_.err
    written = settings.read_text(encoding="utf-8")
    added = "".join(only_inserted(HAND, written))
    assert '"enabledPlugins"' in added and '"CODEX_BRIDGE_BIN"' in added
    # the user changes a setting of theirs: --remove must not give back the old bytes
    # wholesale, only take our members out of the text as it is now
    settings.write_text(written.replace('"dark"', '"light"'), encoding="utf-8")
    assert run_cli("setup", "claude", "--remove", env=env).code == 0
    assert settings.read_text(encoding="utf-8") == HAND.replace('"dark"', '"light"')
    assert not [p for p in cfg.iterdir() if ".bak-codexbridge-" in p.name]


@pytest.mark.real_claude
@pytest.mark.real_codex
def test_setup_then_remove_gives_the_home_back(world: World) -> None:
    home = world.home
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(HAND, encoding="utf-8")
    config = (home / ".codex" / "config.toml").read_bytes()
    before = tree(home)

    for argv in (["setup", "claude"], ["setup", "claude", "--project", "project"],
                 ["setup", "codex"]):
        ok(world.run("codexbridge", *argv))
    only_inserted(HAND, settings.read_text(encoding="utf-8"))
    proc, plugins = claude_p(world)
    ok(proc)
    assert ours(plugins), plugins
    plugins_dir = home / ".claude" / "plugins"
    assert "codexbridge" in json.loads((plugins_dir / "known_marketplaces.json").read_text())
    assert (plugins_dir / "data" / "codexbridge-codexbridge").is_dir()
    got = json.loads(ok(world.run(world.codex_bin, "mcp", "get", "codexbridge", "--json")))
    assert got["transport"]["args"][-3:] == ["mcp", "--role", "codex"]

    # The user edits their settings meanwhile: only our members may come out of them.
    mine = settings.read_text(encoding="utf-8").replace('"dark"', '"light"')
    settings.write_text(mine, encoding="utf-8")
    for argv in (["setup", "claude", "--project", "project", "--remove"],
                 ["setup", "claude", "--remove"], ["setup", "codex", "--remove"]):
        ok(world.run("codexbridge", *argv))

    assert_home_as_before(home, before, HAND.replace('"dark"', '"light"'), config)
    assert not (world.projects["project"] / ".claude").exists()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.mark.real_claude
@pytest.mark.real_codex
@pytest.mark.parametrize("state_home", ["kept", "deleted too"])
def test_pipx_uninstall_first_then_the_way_back(world: World, wheel: Path,
                                                state_home: str) -> None:
    home = world.home
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(HAND, encoding="utf-8")
    config = (home / ".codex" / "config.toml").read_bytes()
    before = tree(home)
    installed: PipxInstall = pipx_install(home, wheel)
    # The user's shell after `pipx install` + `pipx ensurepath`: not this checkout's .venv.
    shell = {"PATH": f"{installed.link.parent}:{world.bin_dir}:/usr/bin:/bin"}
    for argv in (["setup", "claude"], ["setup", "codex"]):
        ok(world.run("codexbridge", *argv, extra_env=shell))
    proc, plugins = claude_p(world, shell)
    ok(proc)
    assert f"codexbridge:{installed.plugin_dir}" in plugins

    installed.uninstall()  # `pipx uninstall codexbridge`, before `setup … --remove`
    assert str(installed.plugin_dir) in settings.read_text(encoding="utf-8")
    # Claude Code: the plugin is skipped without a word (exit 0, nothing on stderr).
    proc, plugins = claude_p(world, shell)
    assert ok(proc) and proc.stderr == "" and not ours(plugins)
    # Codex: its MCP start-up warning names what happened and the fix.
    proc = world.run(world.codex_bin, "exec", "--skip-git-repo-check", "hi",
                     cwd=world.projects["project"], timeout=120, extra_env=shell)
    ok(proc)
    warned = proc.stderr.replace("\\", "")
    assert f"codexbridge is not installed any more ({installed.command} is gone)" in warned
    assert str(home / ".codex" / "config.toml") in warned
    assert "codexbridge setup codex --remove" in warned

    if state_home == "deleted too":
        shutil.rmtree(home / STATE_HOME)
    # The way back (SETUP.md, "Uninstall"): codexbridge from the checkout — as `pipx run
    # --spec <checkout> codexbridge` would run it — takes everything out.
    checkout = [sys.executable, "-m", "codexbridge"]
    for argv in (["setup", "claude", "--remove"], ["setup", "codex", "--remove"]):
        ok(world.run(*checkout, *argv, extra_env=shell))
    assert_home_as_before(home, before, HAND, config, PIPX)
    proc, plugins = claude_p(world, shell)
    assert ok(proc) and not ours(plugins)
