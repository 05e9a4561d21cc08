"""doctor: reading versions, `--help`, codex's config files and Claude's settings."""

from __future__ import annotations

from typing import Any

import pytest

from codexbridge.doctor import parse
from codexbridge.host.binaries import parse_version
from codexbridge.host.tomlfile import load_toml
from codexbridge.messages.listeners import hook_command, watch_command

HELP_0169 = """\
      --strict-config
          Error out when config.toml contains fields that are not recognized

      --listen <URL>
          Transport endpoint URL. Supported values: `stdio://` (default), `unix://`, `unix://PATH`,
          `ws://IP:PORT`, `off`

          [default: stdio://]

      --stdio
          Use stdio as the transport (equivalent to `--listen stdio://`)
"""


def test_versions() -> None:
    assert parse_version("codex-cli 0.169.0\n") == "0.169.0"
    assert parse_version("2.1.332 (Claude Code)") == "2.1.332"
    assert parse_version("codex-cli 0.131.0-alpha.9") == "0.131.0-alpha.9"
    assert parse_version("no digits") is None
    ua = "codexbridge/0.169.0 (Debian 12.0.0; x86_64) xterm (codexbridge; 0.1.0)"
    assert parse.user_agent_version(ua) == "0.169.0"
    assert parse.user_agent_version("weird") is None


def test_listen_schemes() -> None:
    assert parse.listen_schemes(HELP_0169).as_dict() == {"listen_option": True, "ws": True,
                                                         "unix": True}
    no_ws = HELP_0169.replace("`ws://IP:PORT`, ", "")
    # ws:// elsewhere in the help (another option's text) does not count.
    assert parse.listen_schemes(no_ws + "\n  --ws-auth <MODE>\n   for ws:// clients\n"
                                ).ws is False
    assert parse.listen_schemes("Usage: codex app-server\n").listen_option is False


CONFIG = """\
# a personal config
model = "o3"  # comment
approval_policy = 'never'
approvals_reviewer = "user"
profile = "fast"

[features]
hooks = false

[profiles.fast]
approvals_reviewer = "auto_review"   # the profile wins

[mcp_servers.x]
args = [
  "a",
  "b = c",
]
note = \"\"\"
approvals_reviewer = "guardian_subagent"
\"\"\"

[[hooks.PermissionRequest]]
matcher = "*"
[[hooks.PermissionRequest.hooks]]
type = "command"
command = "secret-token-1234 approve"
"""


def test_codex_config_facts() -> None:
    data = load_toml(CONFIG)
    facts = parse.codex_config_facts(data)
    assert facts.approvals_reviewer == "auto_review"
    assert facts.approvals_reviewer_key == "profiles.fast.approvals_reviewer"
    assert facts.approval_policy == "never" and facts.approval_policy_key == (
        "approval_policy")
    assert facts.hooks_enabled is False
    assert facts.permission_request_hooks == 1
    assert "secret-token-1234" not in repr(facts)


def test_load_toml_rejects_invalid_toml() -> None:
    # what codex would refuse is an error, never a tolerant guess
    with pytest.raises(ValueError):
        load_toml("a = = 1")
    with pytest.raises(ValueError, match="nested too deeply"):
        load_toml("a = " + "[" * 100_000)
    assert parse.codex_config_facts(load_toml("")).approvals_reviewer is None


@pytest.mark.parametrize(("data", "count"), [
    ({"hooks": {"PermissionRequest": [{"matcher": "*", "hooks": [{"type": "command",
                                                                 "command": "x"},
                                                                {"type": "command",
                                                                 "command": "y"}]}]}}, 2),
    ({"hooks": {"PermissionRequest": []}}, 0),
    ({"hooks": {"Stop": [{"hooks": [{"command": "z"}]}]}}, 0),
    ({"description": "none"}, 0),
    ({"hooks": {"PermissionRequest": [{"matcher": "*"}]}}, 1),  # odd but present: counts
])
def test_hooks_json_facts(data: dict[str, Any], count: int) -> None:
    assert parse.hooks_json_facts(data) == (count, None)


def test_hooks_json_not_an_object() -> None:
    assert parse.hooks_json_facts([1, 2]) == (0, "does not hold a JSON object")


def test_claude_settings_facts() -> None:
    data = {
        "env": {"CODEX_BRIDGE_MAX_CHAIN": 5, "ANTHROPIC_API_KEY": "sk-secret"},
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "echo other"},
                                {"type": "command", "command": hook_command("web", "/v/python")},
                                {"type": "command", "asyncRewake": True,
                                 "command": watch_command("web", 600, "/v/python")}]}],
            "SessionStart": [{"hooks": [{"type": "command", "asyncRewake": True,
                                         "command": watch_command("web", 600, "/v/python")}]}],
        },
    }
    facts = parse.claude_settings_facts(data)
    assert facts.env == {"CODEX_BRIDGE_MAX_CHAIN": "5"}
    assert [(h.event, h.kind, h.mailbox, h.async_rewake, h.interpreter)
            for h in facts.hooks] == [("Stop", "hook", "web", False, "/v/python"),
                                         ("Stop", "watch", "web", True, "/v/python"),
                                         ("SessionStart", "watch", "web", True, "/v/python")]
    assert "sk-secret" not in repr(facts)


def test_claude_settings_shell_one_liner() -> None:
    # This repo's own .claude/settings.json: a shell line, `--as bridge;` ends the word.
    command = ('cd "$CLAUDE_PROJECT_DIR" 2>/dev/null && [ -x .venv/bin/python ] && exec '
               ".venv/bin/python -m codexbridge inbox hook --as bridge; exit 0")
    facts = parse.claude_settings_facts({"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": command}]}]}})
    assert facts.hooks[0].mailbox == "bridge"
    assert facts.hooks[0].interpreter is None


def test_claude_settings_bad_shapes() -> None:
    assert parse.claude_settings_facts([]).error
    assert parse.claude_settings_facts({"hooks": []}).error
    assert parse.claude_settings_facts({"hooks": {"Stop": "x"}}).hooks == ()


def test_read_fields_narrows_each_field_by_its_declared_type() -> None:
    from codexbridge.doctor.claude_side import PeerSeen
    from codexbridge.jsontypes import read_fields

    raw = {"socket_env": True, "pid_env": 1, "registry_fields": ["sessionId", 2], "protocol": True,
           "claude_version": 3, "seen": "2026-12-01T10:00:00Z", "extra": "kept"}
    p = read_fields(PeerSeen, raw)
    assert p.socket_env is True and p.pid_env is False  # 1 is no bool: read as absent
    assert p.registry is False  # absent reads as absent
    assert p.registry_fields == ("sessionId",)  # a wrong item is dropped, not a crash
    assert p.protocol is None and p.claude_version is None  # a bool is no protocol
    assert p.seen == "2026-12-01T10:00:00Z" and p.raw == raw  # raw: the row's details


def test_codex_config_names_the_mcp_servers_codex_starts() -> None:
    config = parse.codex_config_facts(load_toml(
        '[mcp_servers.codexbridge]\ncommand = "/bin/cb"\nargs = ["mcp", 1]\n'
        '[mcp_servers.remote]\nurl = "http://x"\n'))
    assert config.mcp_servers["codexbridge"] == parse.McpServer("/bin/cb", ("mcp", "1"))
    assert config.mcp_servers["remote"] == parse.McpServer()
