"""The two setups, end to end: `setup_claude` and `setup_codex` (plan, check, carry out)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from typing import Any

from ..errors import UsageError
from ..host.jsonfile import loads_json
from . import claude, codex, files, ledger, run, tomledit
from .run import Report
from .where import (
    Scope,
    claude_settings,
    claude_user_settings,
    codex_config,
    command_argv,
    installed_command,
    ledger_path,
    plugin_dir,
)


def _legacy_hooks(text: str | None) -> list[str]:
    """Our own older hooks (`install-hook`) in a settings file: with the plugin on too,
    every stop would run two codexbridge hooks on two mailboxes."""
    if not text:
        return []

    from ..inbox.install_hook import ours

    try:
        hooks = loads_json(text).get("hooks") or {}
    except (ValueError, AttributeError):
        return []
    found = []
    for event, groups in hooks.items() if isinstance(hooks, dict) else []:
        for group in groups if isinstance(groups, list) else []:
            for hook in (group.get("hooks") or []) if isinstance(group, dict) else []:
                command = hook.get("command") if isinstance(hook, dict) else None
                if isinstance(command, str) and ours(command):
                    found.append(f"{event}: {command}")
    return found


def setup_claude(scope: Scope, *, dry_run: bool = False, remove: bool = False,
                 env: Mapping[str, str] | None = None) -> Report:
    env = os.environ if env is None else env
    report = Report(scope, remove, dry_run)
    user_file, scope_file = claude_user_settings(env), claude_settings(scope, env)
    book = ledger.load(ledger_path())
    binary = installed_command()
    wanted = claude.plan(user_file, scope_file, plugin_dir(), binary)
    records: dict[str, tuple[str, dict[str, Any] | None]] = {}
    if remove:
        paths = run.scoped_files(book, scope.key) or list(wanted)
        for path in paths:
            change = run.plan_json_remove(book, scope, path, wanted.get(path, []),
                                          list(claude.KNOWN_CONTAINERS))
            if change is not None:
                report.changes.append(change)
                records[path] = ("json", None)
        if not run.scoped_files(book, scope.key):
            report.notes.append("no record of an earlier `setup claude` for this scope: "
                                "took out codexbridge's entries where they hold setup's "
                                "values")
    else:
        if binary is None:
            report.notes.append("no installed `codexbridge` command beside this python or "
                                "on PATH: the plugin will look on PATH and in "
                                "~/.local/bin when it runs (pipx install codexbridge)")
        for path, entries in wanted.items():
            change, record = run.plan_json_add(book, scope, path, entries)
            report.changes.append(change)
            records[path] = ("json", record)
        for change in report.changes:
            for hook in _legacy_hooks(change.after):
                report.notes.append(f"{change.path} still has an older codexbridge hook "
                                    f"({hook}); with the plugin it would run twice — take "
                                    "it out by hand")
        report.notes.append("restart Claude Code sessions; the plugin's tools are "
                            f"{claude.TOOL_PREFIX}<tool> (the read-only ones are allowed, "
                            "codex_message_send asks)")
    if not dry_run:
        run.commit(report, records, scope.key)
    return report


def codex_table(url: str | None, token_env: str | None, approval: str
                ) -> dict[str, Any]:
    if approval not in codex.APPROVAL_MODES:
        raise UsageError(f"--approval {approval!r}: one of {', '.join(codex.APPROVAL_MODES)}")
    if url:
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"--url {url!r}: the role-codex server's URL is http(s)://HOST:"
                             "PORT/mcp (what `codexbridge mcp --role codex --http` prints)")
        return codex.url_table(url, token_env, approval)
    return codex.stdio_table(command_argv(), approval)


def setup_codex(scope: Scope, *, dry_run: bool = False, remove: bool = False,
                name: str = codex.SERVER, url: str | None = None,
                token_env: str | None = codex.TOKEN_ENV,
                approval: str = codex.DEFAULT_APPROVAL, mailbox: str | None = None,
                env: Mapping[str, str] | None = None) -> Report:
    from ..host.tomlfile import load_toml

    env = os.environ if env is None else env
    if not name or not all(ch.isalnum() or ch in "-_" for ch in name):
        raise UsageError(f"--name {name!r}: use letters, digits, '-' and '_'")
    report = Report(scope, remove, dry_run)
    path = codex_config(scope, env)
    book = ledger.load(ledger_path())
    scope_key = f"{scope.key}:{name}"
    rec = book.files.get(path)
    mine = rec.scopes.get(scope_key) if rec else None
    before = files.read_text(path)
    text = before or ""
    tomledit.check(text, load_toml, path)  # malformed: refuse before anything else
    if remove:
        if before is None:
            return report
        separator = bool(mine.get("separator")) if mine else True
        untouched = rec is not None and mine is not None and len(rec.scopes) == 1 \
            and ledger.digest(before) == rec.written
        original = files.read_backup(rec.original_backup) if rec and rec.existed else None
        if untouched and rec is not None and (original is not None or not rec.existed):
            after = original  # the bytes it had before setup (None: setup created it)
        else:
            untouched = False
            after = tomledit.cut(before, name, separator)
        lines = [f"removed [mcp_servers.{name}]"] if after != before else []
        report.changes.append(files.FileChange(path, before, after, lines,
                                               keep_backup=not untouched))
        records: dict[str, tuple[str, dict[str, Any] | None]] = {path: ("toml", None)}
        _commit(report, records, scope_key)
        return report
    table = codex_table(url, token_env, approval)
    if mailbox is None and scope.project and not url:
        from .mailbox import project_mailbox

        mailbox = project_mailbox(scope.project)
    # An MCP server's env only reaches a command codex starts, not a URL.
    server_env = {} if url else codex.server_env(env, mailbox)
    block = tomledit.server_block(name, table, server_env)
    after, separator = tomledit.merge(text, name, block, load_toml, path)
    if mine is not None:
        separator = bool(mine.get("separator"))  # as the first run left it
    lines = [f"[mcp_servers.{name}] " + ("updated" if tomledit.find_block(text, name)
                                          else "added") + ": " + _summary(table)]
    change = files.FileChange(path, before, after if after != text else before,
                              lines if after != text else [])
    report.changes.append(change)
    if url and token_env:
        report.notes.append(f"codex reads the token from ${token_env} of its own process: "
                            f"export it before `codex app-server daemon start` / `codex`")
    if scope.project:
        report.notes.append(f"codex reads {path} only once it trusts {scope.project}")
    _commit(report, {path: ("toml", {"server": name, "separator": separator})}, scope_key)
    return report


def _summary(table: dict[str, Any]) -> str:
    where = table.get("url") or shlex.join([table["command"], *table["args"]])
    return (f"{where}, tool_timeout_sec {table['tool_timeout_sec']}, approval mode "
            f"{table['default_tools_approval_mode']}")


def _commit(report: Report, records: dict[str, tuple[str, dict[str, Any] | None]],
            scope_key: str) -> None:
    if not report.dry_run:
        run.commit(report, records, scope_key)
