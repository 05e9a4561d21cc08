"""What the MCP server reads from its environment, checked once at start-up.

Every knob is an environment variable because MCP clients start the server themselves:
`.mcp.json` / `config.toml` can set `env`, rarely anything else. A bad value is a
start-up error (exit 2), never a silent default. Sizes are bytes, times seconds.

    CODEX_BRIDGE_MCP_ROLE          claude | codex (or --role)
    CODEX_BRIDGE_APPROVALS         tui (default) | decline; accept is refused over MCP
    CODEX_BRIDGE_APPROVAL_TIMEOUT  seconds a `tui` approval waits for the human (300)
                                   (both parsed by protocol.approvals, as for the CLI)
    CODEX_BRIDGE_TURN_TIMEOUT      default turn timeout when timeoutMs is not given (300)
    CODEX_BRIDGE_QUEUE_WAIT        seconds a send waits for its turn on a busy thread (300)
    CODEX_BRIDGE_INLINE_MAX        largest reply returned inline (65536)
    CODEX_BRIDGE_CAPTURE_MAX       largest reply kept at all (10 MiB)
    CODEX_BRIDGE_PAGE_BYTES        default bridge_output_read page (16384)
    CODEX_BRIDGE_ARTIFACT_TTL      seconds an artifact lives (86400)
    CODEX_BRIDGE_ARTIFACT_STORE_MAX  bytes all of one role's artifacts may take (100 MiB)
    CODEX_BRIDGE_TEXT_MAX          longest message text accepted, in characters (200000)
    CODEX_BRIDGE_MCP_WARM          0: no quick start (mcp/startup_cache.py), every stdio
                                   start imports the SDK first; unset or seconds: on
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from ..codex.protocol.approvals import DEFAULT_APPROVAL_TIMEOUT, MCP_POLICIES, approval_settings
from ..codex.protocol.enums import ApprovalPolicy
from ..errors import UsageError
from .startup_cache import KNOB, parse_knob

Role = Literal["claude", "codex"]
ROLES: tuple[Role, ...] = ("claude", "codex")
ROLE_ENV = "CODEX_BRIDGE_MCP_ROLE"

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True)
class Settings:
    role: Role
    approvals: ApprovalPolicy = ApprovalPolicy.TUI
    approval_timeout: float = DEFAULT_APPROVAL_TIMEOUT
    turn_timeout: float = 300.0
    queue_wait: float = 300.0
    inline_max: int = 64 * KIB
    capture_max: int = 10 * MIB
    page_bytes: int = 16 * KIB
    artifact_ttl: float = 24 * 3600.0
    artifact_store_max: int = 100 * MIB
    text_max: int = 200_000

    def as_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["approvals"] = self.approvals.value
        return data


# name → (attribute, kind, minimum)
_NUMERIC: dict[str, tuple[str, type, float]] = {
    "CODEX_BRIDGE_TURN_TIMEOUT": ("turn_timeout", float, 1.0),
    "CODEX_BRIDGE_QUEUE_WAIT": ("queue_wait", float, 0.0),
    "CODEX_BRIDGE_INLINE_MAX": ("inline_max", int, 1024),
    "CODEX_BRIDGE_CAPTURE_MAX": ("capture_max", int, 1024),
    "CODEX_BRIDGE_PAGE_BYTES": ("page_bytes", int, 1024),
    "CODEX_BRIDGE_ARTIFACT_TTL": ("artifact_ttl", float, 1.0),
    "CODEX_BRIDGE_ARTIFACT_STORE_MAX": ("artifact_store_max", int, 1024),
    "CODEX_BRIDGE_TEXT_MAX": ("text_max", int, 1),
}


def resolve_role(flag: str | None, env: Mapping[str, str]) -> Role:
    """`--role`, else CODEX_BRIDGE_MCP_ROLE; anything else is a UsageError naming both."""
    raw = flag if flag else env.get(ROLE_ENV, "")
    if not raw:
        raise UsageError(f"no role: pass --role claude|codex or set {ROLE_ENV} "
                         "(claude = the server inside Claude Code, talking to Codex; "
                         "codex = the server inside Codex, leaving mail for Claude)")
    if raw not in ROLES:
        source = "--role" if flag else ROLE_ENV
        raise UsageError(f"{source}={raw!r}: the role is claude or codex")
    return raw


def _numbers(env: Mapping[str, str]) -> dict[str, Any]:
    """The numeric knobs that are set (an int or a float, as the field is), checked
    against their minimum (by attribute)."""
    values: dict[str, Any] = {}
    for name, (attr, kind, minimum) in _NUMERIC.items():
        raw = env.get(name)
        if raw is None or raw.strip() == "":
            continue
        try:
            value: float = kind(raw.strip())
        except ValueError:
            what = "a whole number of bytes" if kind is int else "a number of seconds"
            raise UsageError(f"{name}={raw!r} is not {what}") from None
        if value < minimum:
            raise UsageError(f"{name}={raw!r} is below the minimum {minimum:g}")
        values[attr] = value
    return values


def load(role: Role, env: Mapping[str, str] | None = None) -> Settings:
    """Settings for `role` from `env` (default os.environ); UsageError on a bad value."""
    env = os.environ if env is None else env
    approvals, approval_timeout = approval_settings(env, allowed=MCP_POLICIES)
    got = _numbers(env)

    if parse_knob(env.get(KNOB)) is None:
        raise UsageError(f"{KNOB}={env.get(KNOB)!r} is not a number of seconds "
                         "(0 turns the quick start off)")
    settings = replace(Settings(role, approvals, approval_timeout), **got)
    if settings.inline_max > settings.capture_max:
        raise UsageError("CODEX_BRIDGE_INLINE_MAX cannot be larger than CODEX_BRIDGE_CAPTURE_MAX")
    if settings.capture_max > settings.artifact_store_max:
        raise UsageError("CODEX_BRIDGE_CAPTURE_MAX cannot be larger than "
                         "CODEX_BRIDGE_ARTIFACT_STORE_MAX (one capture must fit the store)")
    return settings
