"""A click group whose commands are imported only when invoked (or asked for by name).

`talk say` must not pay for the MCP SDK, the mailbox code, or the conversation
commands — nor they for each other — so every group lists its commands by module.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

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
