"""Run every check in order: gather the facts, turn them into rows.

A check whose gathering or judging raises becomes one WARN row naming the error; the
others still run. Nothing here writes a file or changes a setting.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from . import binaries, claude_side, codex_side, records
from .codex_side import EndpointFacts, ServeFacts
from .records import HandoffFacts
from .report import Check, check_failed

T = TypeVar("T")


def _guard(name: str, fn: Callable[[], T], fallback: T, out: list[Check]) -> T:
    """fn(), or `fallback` after adding a WARN row for `name`."""
    try:
        return fn()
    except Exception as exc:  # a doctor must report its own failures, not crash on them
        out.append(check_failed(name, exc))
        return fallback


def diagnose(project: Path, url: str | None = None,
             timeout: float = binaries.TIMEOUT, *, deep: bool = False) -> list[Check]:
    checks: list[Check] = []

    def add(name: str, make: Callable[[], list[Check]]) -> None:
        checks.extend(_guard(name, make, [], checks))

    add("state", lambda: records.state_rows(records.state()))
    codex = _guard("codex", lambda: binaries.codex(timeout), None, checks)
    if codex is not None:
        add("codex", lambda: binaries.codex_rows(codex))
        add("protocol", lambda: codex_side.protocol_rows(codex_side.protocol(codex.path)))
    serve = _guard("bridge-json", codex_side.serve, None, checks)
    if serve is not None:
        add("bridge-json", lambda: [codex_side.bridge_row(serve)])
    ep = _guard("app-server", lambda: codex_side.endpoint(url, timeout), None, checks)
    if ep is not None:
        add("app-server", lambda: [codex_side.endpoint_row(serve or ServeFacts(), ep)])
        add("threads", lambda: codex_side.thread_rows(ep))
    add("codex-daemon", lambda: [
        *codex_side.daemon_rows(codex_side.DaemonFacts.read(), serve or ServeFacts(),
                                ep or EndpointFacts(), str(project)),
        claude_side.plugin_row(claude_side.plugin_facts(project))])
    add("codex-mcp-env", lambda: codex_side.mcp_env_rows(codex_side.mcp_env(
        ep or EndpointFacts(), serve or ServeFacts(), project)))
    add("codex-hooks", lambda: codex_side.diverter_rows(
        codex_side.codex_homes(ep or EndpointFacts()) + codex_side.project_codex(project)))
    _claude_checks(add, checks, project, url, timeout)
    if deep and codex is not None:
        add("deep", lambda: codex_side.deep_rows(codex_side.deep(codex.path)))
    return checks


def _claude_checks(add: Callable[[str, Callable[[], list[Check]]], None],
                   checks: list[Check], project: Path, url: str | None,
                   timeout: float) -> None:
    claude = _guard("claude", lambda: binaries.claude(timeout), None, checks)
    if claude is not None:
        add("claude", lambda: binaries.claude_rows(claude))
    # The canary's read of the Claude transcripts serves the handoff rows and the
    # claude-compat rows both (each transcript is read once).
    handoff = _guard("handoff", lambda: records.handoff_facts(str(project), url, timeout),
                     None, checks)
    add("claude-compat", lambda: claude_side.claude_compat_rows(
        claude or binaries.BinaryFacts(), claude_side.Seen.read(),
        None if handoff is None else HandoffFacts.read(handoff).claude))
    proj = _guard("claude-hook", lambda: claude_side.project(project), None, checks)
    boxes = _guard("mailboxes", claude_side.mailboxes, None, checks)
    if proj is not None:
        add("claude-hook", lambda: claude_side.project_rows(
            proj, boxes.listeners if boxes else {},
            bool(claude_side.plugin_facts(project)["enabled_in"])))
    if boxes is not None:
        hooked = claude_side.hooked_mailboxes(proj)
        add("mailboxes", lambda: claude_side.mailbox_rows(boxes, hooked))
    add("max-chain", lambda: claude_side.chain_rows(dict(os.environ),
                                                    claude_side.settings_env(proj)))
    add("deliveries", lambda: records.delivery_rows(records.deliveries()))
    add("codex-shell", lambda: binaries.codex_shell_rows(
        binaries.codex_shell(codex_side.registered_mcp_command(project))))
    if handoff is not None:
        add("handoff", lambda: records.handoff_rows(handoff))
