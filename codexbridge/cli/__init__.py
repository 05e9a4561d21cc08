"""Console entry point.

`inbox hook` runs at every Claude Code stop, and `setup mailbox` and `mcp` are waited
for at every session start, so they are dispatched before click (and everything else)
is imported: `setup mailbox` to `fast.py`, `mcp` to the warm server when one answers
(`mcp/warm.py`). Every other command goes through the click app.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) >= 2 and args[0] == "inbox" and args[1] == "hook":
        from ..inbox.hook_main import run_hook_cli

        sys.exit(run_hook_cli(args[2:]))
    if args[:2] == ["setup", "mailbox"]:
        from .fast import setup_mailbox

        status = setup_mailbox(args[2:])
        if status is not None:
            sys.exit(status)
    if args[:1] == ["mcp"]:
        # The agent waits for this server: hand it to the warm one before click loads.
        from ..mcp.warm import launch

        status = launch(args[1:])
        if status is not None:
            sys.exit(status)
    from .app import cli

    cli.main(args=args, prog_name="codexbridge")
