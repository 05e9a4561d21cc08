"""`setup claude|codex` end to end on files in a temp dir: merge, idempotent, backup,
`--remove` back to the original bytes (or, once edited since, only our entries out),
malformed file refused untouched, scopes sharing one entry."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from codexbridge.errors import UsageError
from codexbridge.setup import claude, ledger, where
from codexbridge.setup.claude import setup_claude
from codexbridge.setup.codex import setup_codex
from codexbridge.setup.where import scope_for

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
