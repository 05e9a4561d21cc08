"""The click application: one lazily imported module per command group (`lazy.py`)."""

from __future__ import annotations

from typing import Any

import click

from .. import __version__
from ..error_tables import exit_help
from .lazy import Lazy, LazyGroup

EXIT_CODES_HELP = exit_help(success="success / turn completed")

COMMANDS: Lazy = {
    "serve": ("codexbridge.cli.serve_cmd", "serve",
              "Run a dedicated ws:// app-server (codex's own daemon needs none)."),
    "talk": ("codexbridge.cli.talk_cmd", "talk",
             "Talk into a live Codex thread: list, say, send, status, read, steer…"),
    "inbox": ("codexbridge.cli.inbox_cmd", "inbox",
              "Mailboxes Codex uses to talk back into Claude Code."),
    "install-hook": ("codexbridge.cli.inbox_cmd", "install_hook",
                     "Register the mailbox Stop hook in a project's .claude/settings.json."),
    "mcp": ("codexbridge.cli.mcp_cmd", "mcp",
            "Run the MCP stdio server for one side (--role claude|codex)."),
    "handoff": ("codexbridge.cli.handoff_cmd", "handoff",
                "Hand the work to the other agent (--to codex|claude): only what it has "
                "not seen."),
    "demo": ("codexbridge.cli.demo_cmd", "demo",
             "Offline: real codex and Claude Code ask each other, each step shown."),
    "setup": ("codexbridge.cli.setup_cmd", "setup",
              "Register codexbridge with Claude Code (plugin) and Codex (MCP server)."),
    "doctor": ("codexbridge.cli.doctor_cmd", "doctor",
               "Check the set-up: binaries, app-server, threads, approval diverters, hooks, "
               "mailboxes."),
}


@click.group(cls=LazyGroup, lazy=COMMANDS, epilog=EXIT_CODES_HELP,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="codexbridge")
def cli(**_: Any) -> None:
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
