"""The click application: one lazily imported module per command group.

Commands are imported only when invoked so that `talk say` does not pay for the
MCP SDK and the mailbox code, and vice versa.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from .. import __version__
from ..error_tables import exit_help

EXIT_CODES_HELP = exit_help(success="success / turn completed")

_LAZY: dict[str, tuple[str, str, str]] = {
    "serve": ("codexbridge.cli.serve_cmd", "serve",
              "Run the shared codex app-server the TUI and the bridge attach to."),
    "talk": ("codexbridge.cli.talk_cmd", "talk",
             "Talk into a live Codex thread: list, say, read."),
    "inbox": ("codexbridge.cli.inbox_cmd", "inbox",
              "Mailboxes Codex uses to talk back into Claude Code."),
    "install-hook": ("codexbridge.cli.inbox_cmd", "install_hook",
                     "Register the mailbox Stop hook in a project's .claude/settings.json."),
    "mcp": ("codexbridge.cli.mcp_cmd", "mcp",
            "Run the MCP stdio server for one side (--role claude|codex)."),
    "demo": ("codexbridge.cli.demo_cmd", "demo",
             "Run the whole Claude → Codex path offline on an embedded mock model."),
    "doctor": ("codexbridge.cli.doctor_cmd", "doctor",
               "Check the set-up: binaries, app-server, threads, approval diverters, hooks, "
               "mailboxes."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(_LAZY))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in _LAZY:
            module_name, attr, _ = _LAZY[cmd_name]
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError as exc:
                if exc.name != module_name:
                    raise
                return None
            command = getattr(module, attr)
            assert isinstance(command, click.Command)
            return command
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Listing help must not import every command module.
        rows = [(name, _LAZY[name][2]) for name in sorted(_LAZY)]
        rows += [(name, cmd.get_short_help_str()) for name, cmd in self.commands.items()]
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))


@click.group(cls=LazyGroup, epilog=EXIT_CODES_HELP,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="codexbridge")
def cli(**_: Any) -> None:
    """Let Claude Code talk into the Codex TUI you are watching, and Codex talk back.

    \b
    Typical use:
      codexbridge serve --cwd ~/project        # terminal 1
      codex --remote ws://127.0.0.1:8787 -C ~/project   # terminal 2: say one thing first
      codexbridge talk say "run the tests"     # from Claude Code or any shell
    """
