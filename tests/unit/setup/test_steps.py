"""`setup claude|codex` end to end on files in a temp dir: merge, idempotent, backup,
`--remove` back to the original bytes (or, once edited since, only our entries out),
malformed file refused untouched, scopes sharing one entry."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from codexbridge.errors import UsageError
from codexbridge.jsontypes import arr
from codexbridge.setup import claude, ledger, where
from codexbridge.setup.claude import setup_claude
from codexbridge.setup.codex import setup_codex
from codexbridge.setup.where import scope_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from codexbridge.jsontypes import JsonObject

SETTINGS = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo other"}]}]},
            "permissions": {"allow": ["Bash(ls:*)"]}}


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    cfg, codex_home, project = tmp_path / "claude", tmp_path / "codex", tmp_path / "proj"
    for d in (cfg, codex_home, project):
        d.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(cfg))
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    return {"cfg": cfg, "codex": codex_home, "project": project}


def write(path: Path, text: str) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path.read_bytes()


def test_claude_project_merge_repeat_and_remove(dirs: dict[str, Path]) -> None:
    proj_file = dirs["project"] / ".claude" / "settings.json"
    original = write(proj_file, json.dumps(SETTINGS, indent=2) + "\n")
    scope = scope_for("claude", str(dirs["project"]), False)
    report = setup_claude(scope)
    assert report.changed
    data = json.loads(proj_file.read_text())
    assert data["hooks"] == SETTINGS["hooks"]  # the other Stop hook is kept
    assert data["enabledPlugins"] == {claude.PLUGIN_ID: True}
    assert data["permissions"]["allow"][0] == "Bash(ls:*)"
    assert claude.TOOL_PREFIX + "codex_thread_read" in data["permissions"]["allow"]
    assert claude.TOOL_PREFIX + "codex_message_send" not in data["permissions"]["allow"]
    user = json.loads((dirs["cfg"] / "settings.json").read_text())
    assert user["extraKnownMarketplaces"]["codexbridge"]["source"] == {
        "source": "directory", "path": where.plugin_dir()}
    assert os.path.isfile(os.path.join(where.plugin_dir(), ".claude-plugin", "plugin.json"))
    backups = [c.backup for c in report.changes if c.backup]
    assert len(backups) == 1 and Path(backups[0]).read_bytes() == original
    assert not setup_claude(scope).changed  # idempotent
    removed = setup_claude(scope, remove=True)
    assert removed.changed
    assert proj_file.read_bytes() == original
    assert not (dirs["cfg"] / "settings.json").exists()  # setup created it
    assert ledger.load(where.ledger_path()).files == {}


def test_dry_run_writes_nothing(dirs: dict[str, Path]) -> None:
    report = setup_claude(scope_for("claude", None, True), dry_run=True)
    assert report.changed and not any(c.written for c in report.changes)
    assert "enabledPlugins" in report.changes[0].diff()
    assert not (dirs["cfg"] / "settings.json").exists()
    assert not os.path.exists(where.ledger_path())


def test_edited_since_only_our_entries_come_out(dirs: dict[str, Path]) -> None:
    user_file = dirs["cfg"] / "settings.json"
    write(user_file, '{\n    "theme": "dark"\n}\n')
    scope = scope_for("claude", None, True)
    setup_claude(scope)
    data = json.loads(user_file.read_text())
    data["model"] = "opus"  # the user (or Claude Code) changes the file afterwards
    user_file.write_text(json.dumps(data, indent=4) + "\n")
    setup_claude(scope, remove=True)
    assert user_file.read_text() == '{\n    "theme": "dark",\n    "model": "opus"\n}\n'


def test_malformed_settings_are_refused_untouched(dirs: dict[str, Path]) -> None:
    proj_file = dirs["project"] / ".claude" / "settings.json"
    bad = write(proj_file, '{"hooks": {,}')
    scope = scope_for("claude", str(dirs["project"]), False)
    with pytest.raises(UsageError, match="not valid JSON") as info:
        setup_claude(scope)
    assert "nothing was changed" in info.value.message
    assert proj_file.read_bytes() == bad
    assert not (dirs["cfg"] / "settings.json").exists()  # no half-done first file


def test_a_value_the_user_set_is_refused(dirs: dict[str, Path]) -> None:
    write(dirs["cfg"] / "settings.json", json.dumps({"enabledPlugins": {claude.PLUGIN_ID:
                                                                        False}}))
    with pytest.raises(UsageError, match="already sets"):
        setup_claude(scope_for("claude", None, True))


def test_two_scopes_share_the_marketplace_until_the_last_goes(
        dirs: dict[str, Path], tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    a, b = scope_for("claude", str(dirs["project"]), False), scope_for("claude", str(other),
                                                                       False)
    setup_claude(a)
    setup_claude(b)
    user_file = dirs["cfg"] / "settings.json"
    setup_claude(a, remove=True)
    assert "codexbridge" in json.loads(user_file.read_text())["extraKnownMarketplaces"]
    assert not (dirs["project"] / ".claude" / "settings.json").exists()
    assert not (dirs["project"] / ".claude").exists()  # the directory setup made goes too
    setup_claude(b, remove=True)
    assert not user_file.exists()


def test_remove_without_a_record_takes_out_setups_values(dirs: dict[str, Path]) -> None:
    scope = scope_for("claude", None, True)
    setup_claude(scope)
    os.unlink(where.ledger_path())
    report = setup_claude(scope, remove=True)
    assert any("no record" in n for n in report.notes)
    assert json.loads((dirs["cfg"] / "settings.json").read_text()) == {}


def test_an_older_install_hook_entry_is_pointed_out(dirs: dict[str, Path]) -> None:
    hook = "/venv/bin/python -P -m codexbridge inbox hook --as web"
    write(dirs["cfg"] / "settings.json", json.dumps(
        {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": hook}]}]}}))
    report = setup_claude(scope_for("claude", None, True))
    assert any(hook in n and "twice" in n for n in report.notes)


CONFIG = '# my codex\nmodel = "o3"\n\n[mcp_servers.other]\ncommand = "x"  # keep\n'


def test_codex_user_merge_repeat_update_and_remove(dirs: dict[str, Path],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import tomllib

    config = dirs["codex"] / "config.toml"
    original = write(config, CONFIG)
    scope = scope_for("codex", None, True)
    setup_codex(scope)
    parsed = tomllib.loads(config.read_text())["mcp_servers"]
    ours = parsed["codexbridge"]
    assert ours["args"][-3:] == ["mcp", "--role", "codex"]
    assert ours["tool_timeout_sec"] == 360 and ours["default_tools_approval_mode"] == "writes"
    assert ours["env"]["CODEX_BRIDGE_HOME"] == os.environ["CODEX_BRIDGE_HOME"]
    assert parsed["other"] == {"command": "x"}
    assert config.read_text().startswith(CONFIG)
    assert not setup_codex(scope).changed
    assert setup_codex(scope, approval="auto").changed
    codex_written = config.read_text()
    # codex itself adds a table after ours (the TUI does: [tui] …)
    config.write_text(codex_written + "\n[tui]\nscreen_reader_detection_done = true\n")
    setup_codex(scope, remove=True)
    assert config.read_text() == CONFIG + "\n[tui]\nscreen_reader_detection_done = true\n"
    config.write_bytes(original)
    setup_codex(scope)
    setup_codex(scope, remove=True)
    assert config.read_bytes() == original


def test_codex_project_url_and_refusals(dirs: dict[str, Path]) -> None:
    import tomllib

    scope = scope_for("codex", str(dirs["project"]), False)
    report = setup_codex(scope, url="http://127.0.0.1:8790/mcp")
    config = dirs["project"] / ".codex" / "config.toml"
    ours = tomllib.loads(config.read_text())["mcp_servers"]["codexbridge"]
    assert ours["url"] == "http://127.0.0.1:8790/mcp"
    assert ours["bearer_token_env_var"] == "CODEX_BRIDGE_MCP_TOKEN"
    assert "command" not in ours and "env" not in ours
    assert any("CODEX_BRIDGE_MCP_TOKEN" in n for n in report.notes)
    setup_codex(scope, remove=True)
    assert not config.exists() and not (dirs["project"] / ".codex").exists()
    with pytest.raises(UsageError, match="http"):
        setup_codex(scope, url="ws://x")
    user = dirs["codex"] / "config.toml"
    by_hand = write(user, '[mcp_servers.codexbridge]\ncommand = "old"\n')
    with pytest.raises(UsageError, match="codex mcp remove codexbridge"):
        setup_codex(scope_for("codex", None, True))
    assert user.read_bytes() == by_hand
    setup_codex(scope_for("codex", None, True), name="bridge2")
    assert "bridge2" in tomllib.loads(user.read_text())["mcp_servers"]


def test_codex_project_names_the_projects_mailbox(dirs: dict[str, Path]) -> None:
    import tomllib

    from codexbridge.setup.mailbox import project_mailbox

    setup_codex(scope_for("codex", str(dirs["project"]), False))
    config = dirs["project"] / ".codex" / "config.toml"
    env = tomllib.loads(config.read_text())["mcp_servers"]["codexbridge"]["env"]
    assert env["CODEX_BRIDGE_MAILBOX"] == project_mailbox(os.path.realpath(dirs["project"]))


def test_scope_options() -> None:
    with pytest.raises(UsageError, match="exclude each other"):
        scope_for("claude", "/tmp", True)
    with pytest.raises(UsageError, match="not a directory"):
        scope_for("claude", "/nonexistent/dir", False)
    assert scope_for("codex", None, False).key == "codex:user"


# --- the last --remove leaves nothing behind --------------------------------------------

def _ours_left(*roots: Path) -> list[str]:
    return sorted(str(p) for root in roots for p in root.rglob("*")
                  if ".bak-codexbridge-" in p.name)


def test_the_last_remove_deletes_every_backup_and_the_record(
        dirs: dict[str, Path]) -> None:
    user_file, config = dirs["cfg"] / "settings.json", dirs["codex"] / "config.toml"
    settings, toml = write(user_file, '{"theme": "dark"}\n'), write(config, CONFIG)
    claude_user, codex_user = scope_for("claude", None, True), scope_for("codex", None, True)
    setup_claude(claude_user)
    setup_codex(codex_user)
    setup_codex(codex_user, approval="auto")  # a second write: a second backup
    project = scope_for("claude", str(dirs["project"]), False)
    setup_claude(project)
    assert len(_ours_left(dirs["cfg"], dirs["codex"])) == 3
    setup_claude(claude_user, remove=True)  # the project still needs the user file
    assert _ours_left(dirs["cfg"]) and os.path.exists(where.ledger_path())
    setup_claude(project, remove=True)
    setup_codex(codex_user, remove=True)
    assert user_file.read_bytes() == settings and config.read_bytes() == toml
    assert _ours_left(dirs["cfg"], dirs["codex"], dirs["project"]) == []
    assert not os.path.exists(where.ledger_path())


def _claude_registry(cfg: Path) -> tuple[Path, str, Path, Path]:
    """What Claude Code 2.1.332 writes at its first start with our marketplace (and
    another one) declared: its registry and a data directory per plugin."""
    plugins = cfg / "plugins"
    known = plugins / "known_marketplaces.json"
    text = json.dumps({
        "theirs": {"source": {"source": "github", "repo": "o/r"},
                   "installLocation": "/x", "lastUpdated": "2026-01-01T00:00:00.000Z"},
        "codexbridge": {"source": {"source": "directory", "path": where.plugin_dir()},
                        "installLocation": where.plugin_dir(),
                        "lastUpdated": "2026-01-01T00:00:00.000Z"}}, indent=2)
    write(known, text)
    ours, theirs = plugins / "data" / "codexbridge-codexbridge", plugins / "data" / "t-theirs"
    ours.mkdir(parents=True)
    (ours / "cache").write_text("x")
    theirs.mkdir()
    return known, text, ours, theirs


def test_the_last_claude_remove_takes_out_claudes_registry_entry_only(
        dirs: dict[str, Path]) -> None:
    known, text, ours, theirs = _claude_registry(dirs["cfg"])
    user, project = scope_for("claude", None, True), scope_for("claude", str(dirs["project"]),
                                                                 False)
    setup_claude(user)
    setup_claude(project)
    setup_claude(project, remove=True)  # the user scope still uses the marketplace
    assert known.read_text() == text and ours.is_dir()
    report = setup_claude(user, remove=True)
    assert json.loads(known.read_text()) == {"theirs": json.loads(text)["theirs"]}
    assert known.read_text() == text[:text.index(',\n  "codexbridge"')] + "\n}"
    assert not ours.exists() and theirs.is_dir()
    assert str(ours) in arr(report.as_json()["deleted"])


def test_remove_follows_no_symlink(dirs: dict[str, Path], tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("theirs")
    plugins = dirs["cfg"] / "plugins"
    (plugins / "data").mkdir(parents=True)
    (plugins / "data" / "codexbridge-codexbridge").symlink_to(outside)
    registry = outside / "known.json"
    registry.write_text('{"codexbridge": {}}')
    (plugins / "known_marketplaces.json").symlink_to(registry)
    user_file = dirs["cfg"] / "settings.json"
    write(user_file, "{}")
    scope = scope_for("claude", None, True)
    setup_claude(scope)
    [backup] = _ours_left(dirs["cfg"])
    os.unlink(backup)
    os.symlink(outside / "keep", backup)  # a backup replaced by a link
    report = setup_claude(scope, remove=True)
    assert (outside / "keep").read_text() == "theirs"  # the link went, not its target
    assert user_file.read_text() == "{}"  # not "restored" from what the link points to
    assert not os.path.lexists(backup)
    assert registry.read_text() == '{"codexbridge": {}}'  # not edited through the link
    assert (plugins / "data" / "codexbridge-codexbridge").is_symlink()
    assert any("known_marketplaces.json as it is" in n for n in report.notes)


def test_with_no_record_our_keys_go_whatever_they_hold(dirs: dict[str, Path],
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    """The state home deleted, codexbridge reinstalled elsewhere: `--remove` still takes
    out the keys only codexbridge uses, though they name the old install."""
    user_file = dirs["cfg"] / "settings.json"
    original = write(user_file, '{\n    "theme": "dark"\n}\n')
    _claude_registry(dirs["cfg"])
    scope = scope_for("claude", None, True)
    setup_claude(scope)
    os.unlink(where.ledger_path())
    monkeypatch.setattr(claude, "plugin_dir", lambda: "/elsewhere/claude_plugin")
    monkeypatch.setattr(claude, "installed_command", lambda: "/elsewhere/bin/codexbridge")
    report = setup_claude(scope, remove=True)
    assert any("no record" in n for n in report.notes)
    assert user_file.read_bytes() == original
    assert _ours_left(dirs["cfg"]) == []
    assert "codexbridge" not in json.loads(
        (dirs["cfg"] / "plugins" / "known_marketplaces.json").read_text())


def test_a_project_with_no_record_leaves_what_the_user_scope_needs(
        dirs: dict[str, Path]) -> None:
    user_file = dirs["cfg"] / "settings.json"
    setup_claude(scope_for("claude", None, True))
    written = user_file.read_bytes()
    setup_claude(scope_for("claude", str(dirs["project"]), False), remove=True)
    assert user_file.read_bytes() == written


# --- codex: the launcher that names the fix once codexbridge is gone ----------------------

def _launcher_run(table: JsonObject, stdin: str) -> str:
    import subprocess

    argv = [str(table["command"]), *(str(a) for a in arr(table["args"]))]
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=20,
                          check=False)
    return str(done.stdout)


def test_codex_runs_codexbridge_through_a_launcher_that_names_the_fix(
        dirs: dict[str, Path], tmp_path: Path) -> None:
    import tomllib

    from codexbridge.doctor.codex_side import registered_mcp_command
    from codexbridge.setup.codex import stdio_table

    fake = tmp_path / "bin" / "codexbridge"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho \"ran: $*\"\n")
    fake.chmod(0o755)
    config = str(dirs["codex"] / "config.toml")
    table = stdio_table([str(fake)], config)
    assert table["command"] == "/bin/sh"
    assert _launcher_run(table, "") == "ran: mcp --role codex\n"
    fake.unlink()  # `pipx uninstall`
    initialize = '{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"id":9}}\n'
    answer = json.loads(_launcher_run(table, initialize))
    assert answer["id"] == 7 and answer["error"]["code"] == -32000
    message = answer["error"]["message"]
    assert f"{fake} is gone" in message and config in message
    assert "codexbridge setup codex --remove" in message
    # as setup writes it, and as doctor reads it back
    setup_codex(scope_for("codex", None, True))
    written = tomllib.loads((dirs["codex"] / "config.toml").read_text())
    server = written["mcp_servers"]["codexbridge"]
    assert server["command"] == "/bin/sh" and server["args"][-3:] == ["mcp", "--role", "codex"]
    assert registered_mcp_command(dirs["project"]) == server["args"][4]
