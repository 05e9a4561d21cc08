"""install-hook: merge into settings.json, keep everything, idempotent, backup, dry run."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from codexbridge.errors import UsageError
from codexbridge.messages.listeners import hook_command, ours, watch_command
from codexbridge.setup.claude import install_hooks as install
from codexbridge.setup.claude import merge_hooks, wanted_hooks

EXISTING: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "Stop": [{"matcher": "*", "hooks": [{"type": "command", "command": "echo mine"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
                                                      "command": "guard.sh"}]}],
    },
}


def test_commands_use_this_interpreter_absolutely() -> None:
    cmd = hook_command("web")
    words = shlex.split(cmd)
    assert words[0] == sys.executable and Path(words[0]).is_absolute()
    assert words[-4:] == ["inbox", "hook", "--as", "web"]
    assert ours(cmd) == ("hook", "web")
    assert ours(watch_command("web", 30)) == ("watch", "web")
    assert ours("echo mine") is None
    assert ours("/opt/x/bin/codexbridge inbox hook --as=a") == ("hook", "a")
    assert ours("node inbox.mjs hook --as web") is None


def test_merge_keeps_everything_and_is_idempotent() -> None:
    wanted = wanted_hooks("web", rewake=False)
    merged, changes = merge_hooks(EXISTING, wanted)
    assert changes and merged["model"] == "opus" and merged["permissions"]
    stop_cmds = [h["command"] for g in merged["hooks"]["Stop"] for h in g["hooks"]]
    assert stop_cmds == ["echo mine", hook_command("web")]
    assert merged["hooks"]["PreToolUse"] == EXISTING["hooks"]["PreToolUse"]
    again, changes2 = merge_hooks(merged, wanted)
    assert again == merged and changes2 == []
    assert EXISTING["hooks"]["Stop"][0]["hooks"] == [{"type": "command",
                                                      "command": "echo mine"}]


def test_rewake_registers_watcher_on_sessionstart_and_stop() -> None:
    merged, _ = merge_hooks({}, wanted_hooks("web", rewake=True, watch_timeout=120))
    start = merged["hooks"]["SessionStart"][0]["hooks"]
    stop = merged["hooks"]["Stop"][0]["hooks"]
    assert [ours(h["command"]) for h in stop] == [("hook", "web"), ("watch", "web")]
    assert [ours(h["command"]) for h in start] == [("hook", "web"), ("watch", "web")]
    assert "asyncRewake" not in start[0]  # the hook only registers the session there
    assert start[1]["asyncRewake"] is True and start[1]["timeout"] == 180
    assert "--timeout 120" in start[1]["command"]


def test_the_session_is_registered_at_its_start_without_rewake() -> None:
    merged, _ = merge_hooks({}, wanted_hooks("web", rewake=False))
    [start] = merged["hooks"]["SessionStart"][0]["hooks"]
    assert ours(start["command"]) == ("hook", "web")


def test_our_entry_is_updated_in_place() -> None:
    old = {"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "/old/venv/bin/python -m codexbridge inbox hook --as web"},
        {"type": "command", "command": "echo after"}]}]}}
    merged, changes = merge_hooks(old, wanted_hooks("web", rewake=False))
    hooks = merged["hooks"]["Stop"][0]["hooks"]
    assert [h["command"] for h in hooks] == [hook_command("web"), "echo after"]
    assert len(merged["hooks"]["Stop"]) == 1 and "updated" in changes[0]


def test_another_mailbox_is_added_not_replaced() -> None:
    first, _ = merge_hooks({}, wanted_hooks("web", rewake=False))
    both, _ = merge_hooks(first, wanted_hooks("api", rewake=False))
    names = [ours(h["command"]) for g in both["hooks"]["Stop"] for h in g["hooks"]]
    assert names == [("hook", "web"), ("hook", "api")]


def test_bad_hooks_shape_is_refused() -> None:
    with pytest.raises(UsageError):
        merge_hooks({"hooks": []}, wanted_hooks("web", rewake=False))
    with pytest.raises(UsageError):
        merge_hooks({"hooks": {"Stop": {}}}, wanted_hooks("web", rewake=False))


def test_install_writes_backs_up_and_dry_runs(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = json.dumps(EXISTING)
    settings.write_text(original)
    dry = install(str(tmp_path), "web", dry_run=True)
    assert not dry.written and settings.read_text() == original
    assert "+" in dry.diff and hook_command("web") in dry.diff
    done = install(str(tmp_path), "web")
    assert done.written and done.backup and Path(done.backup).read_text() == original
    data = json.loads(settings.read_text())
    assert data["permissions"] == EXISTING["permissions"]
    again = install(str(tmp_path), "web")
    assert not again.changes and not again.written and again.backup is None


def test_install_creates_missing_settings(tmp_path: Path) -> None:
    result = install(str(tmp_path), "web", rewake=True)
    data = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    assert result.backup is None and set(data["hooks"]) == {"Stop", "SessionStart"}


def test_install_refuses_broken_json_and_changes_nothing(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{ not json")
    with pytest.raises(UsageError, match="not valid JSON"):
        install(str(tmp_path), "web")
    assert settings.read_text() == "{ not json"
    assert list(settings.parent.iterdir()) == [settings]
    with pytest.raises(UsageError, match="not a directory"):
        install(str(tmp_path / "missing"), "web")


def test_ours_reads_the_mailbox_of_a_shell_one_liner() -> None:
    repo_hook = ('cd "$CLAUDE_PROJECT_DIR" 2>/dev/null && [ -x .venv/bin/python ] && exec '
                 ".venv/bin/python -m codexbridge inbox hook --as bridge; exit 0")
    assert ours(repo_hook) == ("hook", "bridge")
    assert ours("/usr/bin/python3 -m codexbridge inbox watch --as=web&&true") == ("watch", "web")
