"""Run every check in order: gather the facts, turn them into rows.

A check whose gathering or judging raises becomes one WARN row naming the error; the
others still run. Nothing here writes a file or changes a setting.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from . import (
    gather,
    rows,
    rows_claude,
    rows_daemon,
    rows_deliveries,
    rows_handoff,
    rows_health,
)
from .report import Check, check_failed

T = TypeVar("T")


def _guard(name: str, fn: Callable[[], T], fallback: T, out: list[Check]) -> T:
    """fn(), or `fallback` after adding a WARN row for `name`."""
    try:
        return fn()
    except Exception as exc:  # a doctor must report its own failures, not crash on them
        out.append(check_failed(name, exc))
        return fallback


def _handoff_facts(project: Path, url: str | None, timeout: float) -> dict[str, Any]:
    from ..handoff.canary import facts  # the parser canaries (docs/handoff.md)

    return facts(str(project), url, timeout)


def diagnose(project: Path, url: str | None = None,
             timeout: float = gather.TIMEOUT, *, deep: bool = False) -> list[Check]:
    checks: list[Check] = []

    def add(name: str, make: Callable[[], list[Check]]) -> None:
        checks.extend(_guard(name, make, [], checks))

    empty: dict[str, Any] = {}
    add("state", lambda: rows_health.state_rows(rows_health.gather_state()))
    codex = _guard("codex", lambda: gather.codex(timeout), None, checks)
    if codex is not None:
        add("codex", lambda: rows.codex_rows(codex))
        add("protocol", lambda: rows_health.protocol_rows(rows_health.gather_protocol(
            codex.get("path"))))
    serve = _guard("bridge-json", gather.serve, None, checks)
    if serve is not None:
        add("bridge-json", lambda: [rows.bridge_row(serve)])
    ep = _guard("app-server", lambda: gather.endpoint(url, timeout), None, checks)
    if ep is not None:
        add("app-server", lambda: [rows.endpoint_row(serve or empty, ep)])
        add("threads", lambda: rows.thread_rows(ep))
    add("codex-daemon", lambda: _daemon_rows(serve or empty, ep or empty, project))
    add("codex-hooks", lambda: rows.diverter_rows(
        gather.codex_homes(ep or empty) + _project_codex(project)))
    claude = _guard("claude", lambda: gather.claude(timeout), None, checks)
    if claude is not None:
        add("claude", lambda: rows_claude.claude_rows(claude))
    # The canary's read of the Claude transcripts serves the handoff rows and the
    # claude-compat rows both (each transcript is read once).
    handoff = _guard("handoff", lambda: _handoff_facts(project, url, timeout), None, checks)
    add("claude-compat", lambda: rows_claude.claude_compat_rows({
        "claude": claude or empty, "seen": gather.claude_seen(),
        "transcripts": None if handoff is None else list(handoff.get("claude") or [])}))
    proj = _guard("claude-hook", lambda: gather.project(project), None, checks)
    boxes = _guard("mailboxes", gather.mailboxes, None, checks)
    listeners = (boxes or empty).get("listeners") or {}
    if proj is not None:
        add("claude-hook", lambda: rows_claude.project_rows(proj, listeners,
                                                            _plugin_enabled(project)))
    if boxes is not None:
        hooked = gather.hooked_mailboxes(proj or empty)
        add("mailboxes", lambda: rows_claude.mailbox_rows(boxes, hooked))
    add("max-chain", lambda: rows_claude.chain_rows(dict(os.environ),
                                                    gather.settings_env(proj or empty)))
    add("tmux", lambda: rows_claude.tmux_rows(gather.tmux()))
    add("deliveries", lambda: rows_deliveries.delivery_rows(
        rows_deliveries.gather_deliveries()))
    add("codex-shell", lambda: rows_deliveries.codex_shell_rows(
        rows_deliveries.gather_codex_shell(_registered_command(project))))
    if handoff is not None:
        add("handoff", lambda: rows_handoff.handoff_rows(handoff))
    if deep and codex is not None:
        add("deep", lambda: rows_health.deep_rows(rows_health.gather_deep(codex.get("path"))))
    return checks


def _project_codex(project: Path) -> list[dict[str, Any]]:
    """The project's own `.codex/` (config.toml, hooks.json) is read like CODEX_HOME."""
    layer = project / ".codex"
    if not layer.is_dir():
        return []
    return [gather.codex_home_layer(layer, ["the project's .codex (read by codex in it)"],
                                    "@project")]


def _daemon_rows(serve: dict[str, Any], ep: dict[str, Any], project: Path) -> list[Check]:
    from ..host.claude_plugin import plugin_facts
    from ..host.daemon import facts

    return [*rows_daemon.daemon_rows(facts(), serve, ep, str(project)),
            rows_daemon.plugin_row(plugin_facts(str(project)))]


def _plugin_enabled(project: Path) -> bool:
    from ..host.claude_plugin import plugin_facts

    return bool(plugin_facts(str(project)).get("enabled_in"))


def _registered_command(project: Path) -> str | None:
    """The command of `[mcp_servers.codexbridge]` codex would start (the project's
    .codex/config.toml first, then CODEX_HOME's), if setup registered one."""
    from ..host.daemon import codex_home
    from ..host.tomlfile import load_toml

    for config in (project / ".codex" / "config.toml", codex_home() / "config.toml"):
        try:
            table = load_toml(config.read_text(encoding="utf-8")).get("mcp_servers") or {}
        except (OSError, ValueError):
            continue
        server = table.get("codexbridge") if isinstance(table, dict) else None
        command = server.get("command") if isinstance(server, dict) else None
        if isinstance(command, str) and command:
            return command
    return None
