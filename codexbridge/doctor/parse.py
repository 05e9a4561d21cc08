"""Reading what the doctor looks at: version strings, `--help` text, codex's config.toml
and hooks.json, Claude Code's settings.json. Pure: text or parsed data in, facts out.

Nothing here keeps a hook's command or a config value it was not asked for, so no
secret that sits in those files can reach the report.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from ..inbox.install_hook import ours

# `codexbridge/0.169.0 (Debian 12; x86_64) …`: the product token's version is codex's.
_USER_AGENT = re.compile(r"^[^/\s]+/(\d+\.\d+\.\d+[0-9A-Za-z.+-]*)")
DIVERTING_REVIEWERS = ("auto_review", "guardian_subagent")
CHAIN_VARS = ("CODEX_BRIDGE_MAX_CHAIN", "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP")


def user_agent_version(user_agent: str) -> str | None:
    found = _USER_AGENT.match(user_agent.strip())
    return found.group(1) if found else None


def listen_schemes(help_text: str) -> dict[str, bool]:
    """Which `--listen` schemes `codex app-server --help` names.

    Only the `--listen` paragraph counts (up to the next option), so a `ws://` in some
    other option's text cannot pass for support.
    """
    lines = help_text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip().startswith("--listen")),
                 None)
    if start is None:
        return {"listen_option": False, "ws": False, "unix": False}
    block = [lines[start]]
    for line in lines[start + 1:]:
        if line.strip().startswith("-"):
            break
        block.append(line)
    text = "\n".join(block)
    return {"listen_option": True, "ws": "ws://" in text, "unix": "unix://" in text}


def _count_handlers(groups: Any) -> int:
    """Handlers under one event: `[{matcher?, hooks: [...]}, …]` (a malformed group that
    is still there counts once: codex may run it, we cannot tell)."""
    if isinstance(groups, dict):
        groups = [groups]
    if not isinstance(groups, list):
        return 1 if groups else 0
    count = 0
    for group in groups:
        hooks = group.get("hooks") if isinstance(group, dict) else None
        count += len(hooks) if isinstance(hooks, list) else 1
    return count


def _table(data: Any, key: str) -> dict[str, Any]:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def codex_config_facts(data: dict[str, Any]) -> dict[str, Any]:
    """What in a parsed config.toml can take approvals away from the clients.

    A `profile = "x"` selects `[profiles.x]`, whose keys win over the top level.
    """
    profile = data.get("profile") if isinstance(data.get("profile"), str) else None
    layer = _table(_table(data, "profiles"), profile) if profile else {}

    def pick(key: str) -> tuple[str | None, str | None]:
        for where, source in ((layer, f"profiles.{profile}.{key}"), (data, key)):
            value = where.get(key)
            if isinstance(value, str):
                return value, source
        return None, None

    reviewer, reviewer_key = pick("approvals_reviewer")
    policy, policy_key = pick("approval_policy")
    features = _table(data, "features")
    hooks_enabled: bool | None = None
    for key in ("hooks", "codex_hooks"):  # codex_hooks: the deprecated alias
        if isinstance(features.get(key), bool):
            hooks_enabled = bool(features[key])
            break
    return {
        "profile": profile,
        "approvals_reviewer": reviewer, "approvals_reviewer_key": reviewer_key,
        "approval_policy": policy, "approval_policy_key": policy_key,
        "hooks_enabled": hooks_enabled,
        # Inline `[[hooks.PermissionRequest]]` tables count like hooks.json entries.
        "permission_request_hooks": _count_handlers(_table(data, "hooks")
                                                    .get("PermissionRequest")),
    }


def hooks_json_facts(data: Any) -> dict[str, Any]:
    """`{"hooks": {"PermissionRequest": [...]}}` → how many PermissionRequest handlers."""
    if not isinstance(data, dict):
        return {"error": "does not hold a JSON object", "permission_request_hooks": 0}
    return {"permission_request_hooks": _count_handlers(_table(data, "hooks")
                                                        .get("PermissionRequest"))}


# --- Claude Code settings.json ---------------------------------------------------------

def _interpreter(command: str) -> str | None:
    """The program our hook command starts, when it starts one by absolute path (what
    install-hook writes); None for shell one-liners such as this repo's own."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    return words[0] if words and words[0].startswith("/") else None


def claude_settings_facts(data: Any) -> dict[str, Any]:
    """Our hooks in one parsed settings.json: Stop hooks and asyncRewake watchers, each with
    its mailbox, plus the block-chain variables its `env` sets."""
    if not isinstance(data, dict):
        return {"error": "does not hold a JSON object", "hooks": [], "env": {}}
    found: list[dict[str, Any]] = []
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        return {"error": '"hooks" is not a JSON object', "hooks": [], "env": {}}
    for event, groups in (hooks or {}).items():
        for group in groups if isinstance(groups, list) else []:
            entries = group.get("hooks") if isinstance(group, dict) else None
            for entry in entries if isinstance(entries, list) else []:
                command = entry.get("command") if isinstance(entry, dict) else None
                if not isinstance(command, str):
                    continue
                mine = ours(command)
                if mine is None:
                    continue
                kind, name = mine
                found.append({"event": event, "kind": kind, "mailbox": name,
                              "async_rewake": bool(entry.get("asyncRewake")),
                              "interpreter": _interpreter(command)})
    env = data.get("env")
    chain_env = {k: str(env[k]) for k in CHAIN_VARS
                 if isinstance(env, dict) and k in env}
    return {"hooks": found, "env": chain_env}
