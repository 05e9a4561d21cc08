"""Reading what the doctor looks at: version strings, `--help` text, codex's config.toml
and hooks.json, Claude Code's settings.json, and the JSON facts other rooms hand doctor
(the hooks' evidence file, the handoff canary's verdicts: read with the shared
`jsontypes.read_fields`). Pure — text or parsed data in, facts out — but for
`read_text`, which fetches a file's text for them.

Nothing here keeps a hook's command or a config value it was not asked for, so no
secret that sits in those files can reach the report.
"""

from __future__ import annotations

import enum
import re
import shlex
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..jsontypes import obj, opt_str
from ..messages.listeners import ours

if TYPE_CHECKING:
    from ..jsontypes import JsonValue

# `codexbridge/0.169.0 (Debian 12; x86_64) …`: the product token's version is codex's.
_USER_AGENT = re.compile(r"^[^/\s]+/(\d+\.\d+\.\d+[0-9A-Za-z.+-]*)")
DIVERTING_REVIEWERS = ("auto_review", "guardian_subagent")
CHAIN_VARS = ("CODEX_BRIDGE_MAX_CHAIN", "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP")


def read_text(path: Path) -> tuple[str | None, str | None]:
    """(the file's text, None), (None, None) when it is absent, (None, why) when it cannot
    be read."""
    try:
        return path.read_text(encoding="utf-8"), None
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as exc:
        return None, getattr(exc, "strerror", None) or str(exc)


def user_agent_version(user_agent: str) -> str | None:
    found = _USER_AGENT.match(user_agent.strip())
    return found.group(1) if found else None


@dataclass(frozen=True, slots=True)
class ListenSchemes:
    """Which `--listen` schemes `codex app-server --help` names."""

    listen_option: bool = False
    ws: bool = False
    unix: bool = False

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def listen_schemes(help_text: str) -> ListenSchemes:
    """Only the `--listen` paragraph counts (up to the next option), so a `ws://` in some
    other option's text cannot pass for support."""
    lines = help_text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip().startswith("--listen")),
                 None)
    if start is None:
        return ListenSchemes()
    block = [lines[start]]
    for line in lines[start + 1:]:
        if line.strip().startswith("-"):
            break
        block.append(line)
    text = "\n".join(block)
    return ListenSchemes(True, "ws://" in text, "unix://" in text)


def _count_handlers(groups: object) -> int:
    """Handlers under one event: `[{matcher?, hooks: [...]}, …]` (a malformed group that
    is still there counts once: codex may run it, we cannot tell)."""
    if isinstance(groups, dict):
        groups = [groups]
    if not isinstance(groups, list):
        return 1 if groups else 0
    count = 0
    for group in groups:
        match group:
            case {"hooks": list(hooks)}:
                count += len(hooks)
            case _:
                count += 1
    return count


def _permission_request_hooks(hooks: object) -> int:
    """The PermissionRequest handlers of a `hooks` table (hooks.json's, config.toml's)."""
    match hooks:
        case {"PermissionRequest": groups}:
            return _count_handlers(groups)
    return 0


@dataclass(frozen=True, slots=True)
class McpServer:
    """One `[mcp_servers.NAME]` table of codex's config: the command codex would start."""

    command: str | None = None
    args: tuple[str, ...] = ()

    @staticmethod
    def from_toml(table: object) -> McpServer:
        match table:
            case {"command": str(command), "args": list(args)}:
                return McpServer(command, tuple(str(a) for a in args))
            case {"command": str(command)}:
                return McpServer(command)
        return McpServer()


@dataclass(frozen=True, slots=True)
class CodexConfig:
    """What in a parsed config.toml can take approvals away from the clients (each
    `*_key` names where the value was found: a profile's key wins)."""

    profile: str | None = None
    approvals_reviewer: str | None = None
    approvals_reviewer_key: str | None = None
    approval_policy: str | None = None
    approval_policy_key: str | None = None
    hooks_enabled: bool | None = None
    # Inline `[[hooks.PermissionRequest]]` tables count like hooks.json entries.
    permission_request_hooks: int = 0
    # `[mcp_servers.NAME]`: what codex starts (doctor's codex-shell row asks after ours)
    mcp_servers: Mapping[str, McpServer] = field(default_factory=dict)


def codex_config_facts(data: Mapping[str, object]) -> CodexConfig:
    """A `profile = "x"` selects `[profiles.x]`, whose keys win over the top level."""
    profile = opt_str(data.get("profile"))
    layer = obj(obj(data.get("profiles")).get(profile)) if profile else {}

    def pick(key: str) -> tuple[str | None, str | None]:
        for where, source in ((layer, f"profiles.{profile}.{key}"), (data, key)):
            if isinstance(value := where.get(key), str):
                return value, source
        return None, None

    reviewer, reviewer_key = pick("approvals_reviewer")
    policy, policy_key = pick("approval_policy")
    features = obj(data.get("features"))
    # codex_hooks: the deprecated alias of `hooks`
    hooks_enabled = next((v for k in ("hooks", "codex_hooks")
                          if isinstance(v := features.get(k), bool)), None)
    servers = obj(data.get("mcp_servers"))
    return CodexConfig(profile, reviewer, reviewer_key, policy, policy_key, hooks_enabled,
                       _permission_request_hooks(data.get("hooks")),
                       {name: McpServer.from_toml(t) for name, t in servers.items()})


def hooks_json_facts(data: JsonValue) -> tuple[int, str | None]:
    """`{"hooks": {"PermissionRequest": [...]}}` → (how many PermissionRequest handlers,
    why the file could not be read)."""
    match data:
        case {"hooks": hooks}:
            return _permission_request_hooks(hooks), None
        case dict():
            return 0, None
    return 0, "does not hold a JSON object"


# --- Claude Code settings.json ---------------------------------------------------------

def _interpreter(command: str) -> str | None:
    """The program our hook command starts, when it starts one by absolute path (what
    install-hook writes); None for shell one-liners such as this repo's own."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    return words[0] if words and words[0].startswith("/") else None


class HookKind(enum.StrEnum):
    """What `inbox/install_hook.ours` calls our two hook commands."""

    STOP = "hook"  # the Stop hook that delivers mail
    WATCH = "watch"  # the asyncRewake watcher


@dataclass(frozen=True, slots=True)
class ClaudeHook:
    """One codexbridge hook in a settings file. `interpreter_ok` is filled in by the
    gatherer (it looks at the disk) for a hook that names an interpreter."""

    event: str
    kind: HookKind
    mailbox: str
    async_rewake: bool = False
    interpreter: str | None = None
    interpreter_ok: bool | None = None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"event": self.event, "kind": self.kind,
                                  "mailbox": self.mailbox, "async_rewake": self.async_rewake,
                                  "interpreter": self.interpreter}
        if self.interpreter:
            out["interpreter_ok"] = self.interpreter_ok
        return out


@dataclass(frozen=True, slots=True)
class ClaudeSettings:
    """Our hooks in one parsed settings.json, and the block-chain variables its `env`
    sets; `error` when the file is not settings Claude Code would read."""

    hooks: tuple[ClaudeHook, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    error: str | None = None


def _our_hooks(event: str, groups: JsonValue) -> list[ClaudeHook]:
    """`[{matcher?, hooks: [{type, command, asyncRewake?}, …]}, …]`: ours among them."""
    found = []
    for group in groups if isinstance(groups, list) else []:
        match group:
            case {"hooks": list(entries)}:
                pass
            case _:
                continue
        for entry in entries:
            match entry:
                case {"command": str(command)} if (mine := ours(command)) is not None:
                    kind, name = mine
                    found.append(ClaudeHook(event, HookKind(kind), name,
                                            bool(obj(entry).get("asyncRewake")),
                                            _interpreter(command)))
    return found


def claude_settings_facts(data: JsonValue) -> ClaudeSettings:
    if not isinstance(data, dict):
        return ClaudeSettings(error="does not hold a JSON object")
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        return ClaudeSettings(error='"hooks" is not a JSON object')
    found = [h for event, groups in (hooks or {}).items() for h in _our_hooks(event, groups)]
    env = data.get("env")
    chain_env = {k: str(env[k]) for k in CHAIN_VARS if isinstance(env, dict) and k in env}
    return ClaudeSettings(tuple(found), chain_env)
