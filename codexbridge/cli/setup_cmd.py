"""`codexbridge setup claude|codex [--project DIR | --user] [--dry-run] [--remove]`, and
`codexbridge install-hook` (the mailbox hooks alone, into one project)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import click

from ..error_tables import exit_help
from ..errors import UsageError
from ..host.mailboxes import mailbox_name, validate_name
from ..messages import to_claude as inbox_service
from ..messages.listeners import WATCH_TIMEOUT as DEFAULT_TIMEOUT
from ..setup.claude import install_hooks, setup_claude
from ..setup.codex import setup_codex
from ..setup.where import scope_for
from .command import command, echo, emit_json

if TYPE_CHECKING:
    from ..setup.ledger import Report

F = TypeVar("F", bound=Callable[..., object])
SETUP_EXIT_HELP = exit_help(UsageError, success="done (or, with --dry-run, shown)",
                            extra={2: "bad option, or a settings file that is malformed or "
                                      "holds a value setup would change (left untouched)"})


def _scope_options(fn: F) -> F:
    for option in reversed([
        click.option("--project", metavar="DIR", default=None,
                     help="Register for one project (its .claude/settings.json or "
                          ".codex/config.toml)."),
        click.option("--user", is_flag=True,
                     help="Register for every project (your own settings). The default."),
        click.option("--dry-run", is_flag=True, help="Show the changes; write nothing."),
        click.option("--remove", is_flag=True,
                     help="Take out exactly what setup added (a file untouched since gets "
                          "its original bytes back); the last scope also deletes setup's "
                          "backups and record."),
        click.option("--json", "as_json", is_flag=True,
                     help="Print one JSON object on stdout for scripts."),
    ]):
        fn = option(fn)
    return fn


def _show(report: Report, as_json: bool) -> None:
    if as_json:
        emit_json(report.as_json())
        return
    for change in report.changes:
        if not change.changed:
            echo(f"{change.path}: " + ("nothing of codexbridge's in it" if report.removing
                                       else "already set up; nothing to change"))
            continue
        if report.dry_run:
            echo(change.diff(), nl=False)
            continue
        for line in change.lines:
            echo(f"{change.path}: {line}")
        if change.backup:
            echo(f"  backup: {change.backup}")
    for path in report.leftovers:
        echo(f"{path}: {'would be deleted' if report.dry_run else 'deleted'}")
    if report.dry_run:
        echo("(dry run: nothing was written)")
    if not report.changes and not report.leftovers:
        echo("nothing to do")
    for note in report.notes:
        echo(f"note: {note}")


@click.group("setup", context_settings={"help_option_names": ["-h", "--help"]},
             epilog=SETUP_EXIT_HELP)
def setup() -> None:
    """Register codexbridge with Claude Code and with Codex, in their own settings files.

    \b
    Every run merges into what is there (other hooks, servers and settings are kept),
    backs a changed file up as <file>.bak-codexbridge-<time>, is safe to repeat, and
    refuses a malformed file (nothing written). `--remove` takes out exactly what it
    added, by the record in $CODEX_BRIDGE_HOME/setup.json; the last one leaves nothing
    behind (backups, Claude Code's registry entry for the plugin, the record itself).
    """


@setup.command("claude", epilog=SETUP_EXIT_HELP)
@_scope_options
@command
def claude_cmd(project: str | None, user: bool, dry_run: bool, remove: bool,
               as_json: bool) -> None:
    """Enable codexbridge's Claude Code plugin (hooks, MCP tools, skill, commands).

    \b
    Writes (docs/fitting-in.md of codexbridge's source, "The Claude side"):
      your settings.json ($CLAUDE_CONFIG_DIR, else ~/.claude): the plugin's marketplace
        (this package's claude_plugin/ directory) and CODEX_BRIDGE_BIN
      the scope's settings.json: enabledPlugins["codexbridge@codexbridge"] and the
        plugin's read-only tools in permissions.allow
    """
    _show(setup_claude(scope_for("claude", project, user), dry_run=dry_run, remove=remove),
          as_json)


@setup.command("codex", epilog=SETUP_EXIT_HELP)
@_scope_options
@click.option("--url", default=None, metavar="URL",
              help="Register the role-codex server by URL (streamable HTTP: Codex on "
                   "another machine than Claude) instead of as a command.")
@click.option("--token-env", default="CODEX_BRIDGE_MCP_TOKEN", show_default=True,
              metavar="VAR", help="With --url: the variable codex reads the bearer token "
                                  "from ('' for none).")
@click.option("--approval", default="writes", show_default=True,
              type=click.Choice(["writes", "auto", "prompt", "approve"]),
              help="default_tools_approval_mode: writes = the human approves each "
                   "message Codex leaves for Claude; auto = nobody is asked.")
@click.option("--mailbox", default=None, metavar="NAME",
              help="The mailbox Codex writes to when it names none (default with "
                   "--project: that project's, as the Claude plugin names it).")
@click.option("--name", default="codexbridge", show_default=True,
              help="The server's name in [mcp_servers.NAME].")
@command
def codex_cmd(project: str | None, user: bool, dry_run: bool, remove: bool, as_json: bool,
              url: str | None, token_env: str, approval: str, mailbox: str | None,
              name: str) -> None:
    """Register the role-codex MCP server in codex's config.toml.

    \b
    Writes one marked block to $CODEX_HOME/config.toml (--user) or DIR/.codex/config.toml
    (--project): [mcp_servers.NAME] with the command (or --url), tool_timeout_sec = 360
    and default_tools_approval_mode — what `codex mcp add` writes plus the two keys it
    cannot set (docs/fitting-in.md of codexbridge's source, "The Codex side"). Comments
    and formatting of the rest of the file are kept byte for byte.
    """
    if mailbox:
        validate_name(mailbox)
    report = setup_codex(scope_for("codex", project, user), dry_run=dry_run, remove=remove,
                         name=name, url=url, token_env=token_env or None, approval=approval,
                         mailbox=mailbox)
    _show(report, as_json)


@click.command("install-hook", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--project", "project", required=True, metavar="DIR",
              type=click.Path(file_okay=False), help="The Claude Code project to hook.")
@click.option("--as", "name", required=True, metavar="NAME",
              help="Mailbox this project's sessions listen on.")
@click.option("--rewake", is_flag=True,
              help="Also register the asyncRewake watcher (SessionStart + Stop) so mail "
                   "wakes an idle interactive session.")
@click.option("--watch-timeout", type=click.FloatRange(min=1), default=DEFAULT_TIMEOUT,
              show_default=True, help="Seconds each watcher waits (with --rewake).")
@click.option("--dry-run", is_flag=True, help="Show the change; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@command
def install_hook(project: str, name: str, rewake: bool, watch_timeout: float,
                 dry_run: bool, as_json: bool) -> None:
    """Merge the mailbox hooks into DIR/.claude/settings.json.

    Keeps every existing hook and setting, and the file's style (indent, final
    newline), as `setup claude` does; running it again changes nothing (our entry for
    the same mailbox is updated in place). The old file is backed up as
    settings.json.bak-codexbridge-<time>. The hook command uses this interpreter by
    absolute path, so it works from any project.
    """
    mailbox = mailbox_name(name)
    with inbox_service.mailbox_io("update the settings file"):
        result = install_hooks(project, mailbox, rewake=rewake, dry_run=dry_run,
                         watch_timeout=watch_timeout)
    if as_json:
        emit_json({"ok": True, "settings": result.settings_path, "changes": result.changes,
                   "written": result.written, "backup": result.backup,
                   "dry_run": dry_run, "diff": result.diff, "commands": result.commands})
        return
    if not result.changes:
        echo(f"{result.settings_path}: already has the codexbridge hooks for "
             f'"{mailbox}"; nothing to change')
        return
    if dry_run:
        echo(result.diff, nl=False)
        echo("(dry run: nothing was written)")
        return
    for change in result.changes:
        echo(change)
    if result.backup:
        echo(f"backup: {result.backup}")
    echo(f"wrote {result.settings_path}\nRestart Claude Code sessions in that "
         f'project; then `codexbridge inbox push --to {mailbox} "..."` reaches them.')
