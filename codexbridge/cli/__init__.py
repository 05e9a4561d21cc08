"""Console entry point.

`inbox hook` runs at every Claude Code stop, so it is dispatched before click (and
everything else) is imported; every other command goes through the click app.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) >= 2 and args[0] == "inbox" and args[1] == "hook":
        from ..inbox.hook_main import run_hook_cli

        sys.exit(run_hook_cli(args[2:]))
    from .app import cli

    cli.main(args=args, prog_name="codexbridge")
