"""The click application, and the group class every command group uses: each command
is imported only when invoked (or asked for by name).

`talk say` must not pay for the MCP SDK, the mailbox code, or the conversation
commands — nor they for each other — and `codexbridge --help` for none of them, so
every group lists its commands by module.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from .. import __version__
from ..error_tables import exit_help

# command name → (module, attribute, one-line help shown in the listing)
Lazy = dict[str, tuple[str, str, str]]


class LazyGroup(click.Group):
    def __init__(self, *args: Any, lazy: Lazy | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy: Lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            module_name, attr, _ = self.lazy[cmd_name]
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
        rows = [(name, self.lazy[name][2]) for name in sorted(self.lazy)
                if not self.lazy[name][2].startswith("(internal)")]
        rows += [(name, cmd.get_short_help_str()) for name, cmd in self.commands.items()
                 if not cmd.hidden]
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))


EXIT_CODES_HELP = exit_help(success="success / turn completed")

COMMANDS: Lazy = {
    "serve": ("codexbridge.cli.serve_cmd", "serve",
              "Run a dedicated ws:// app-server (codex's own daemon needs none)."),
    "talk": ("codexbridge.cli.talk_cmd", "talk",
             "Talk into a live Codex thread: list, say, send, status, read, steer…"),
    "log": ("codexbridge.cli.log_cmd", "log",
            "One conversation as a timeline across both agents (--follow, --list)."),
    "inbox": ("codexbridge.cli.inbox_cmd", "inbox",
              "Mailboxes Codex uses to talk back into Claude Code."),
    "install-hook": ("codexbridge.cli.setup_cmd", "install_hook",
                     "Register the mailbox Stop hook in a project's .claude/settings.json."),
    "mcp": ("codexbridge.cli.mcp_cmd", "mcp",
            "Run the MCP stdio server for one side (--role claude|codex)."),
    "handoff": ("codexbridge.cli.handoff_cmd", "handoff",
                "Hand the work to the other agent (--to codex|claude): only what it has "
                "not seen."),
    "setup": ("codexbridge.cli.setup_cmd", "setup",
              "Register codexbridge with Claude Code (plugin) and Codex (MCP server)."),
    "doctor": ("codexbridge.cli.doctor_cmd", "doctor",
               "Check the set-up: binaries, app-server, threads, approval diverters, hooks, "
               "mailboxes."),
}


@click.group(cls=LazyGroup, lazy=COMMANDS, epilog=EXIT_CODES_HELP,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="codexbridge")
def cli(**_: object) -> None:
    """Let Claude Code talk into the Codex TUI you are watching, and Codex talk back.

    \b
    Typical use:
      codexbridge setup claude              # once: the Claude Code plugin
      codexbridge setup codex               # once: the MCP tools Codex calls
      codex -C ~/project                    # your TUI, on codex's own daemon: say one thing
      codexbridge talk say "run the tests"  # from Claude Code or any shell
      codexbridge doctor                    # what is missing, and how to fix it
    `codexbridge serve` is the alternative to the daemon: a dedicated ws:// server.
    """
