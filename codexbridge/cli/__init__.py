"""Console entry point.

`inbox hook` runs at every Claude Code stop, and `setup mailbox` and `mcp` are waited
for at every session start, so they are dispatched before click (and everything else)
is imported: `setup mailbox` to `fast.py`, `mcp` to the warm server when one answers
(`mcp/warm.py`). Every other command goes through the click app. An unexpected
exception anywhere is a bug: one line, the traceback in the log, exit 70 (`bug.py`).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    try:
        _dispatch(args)
    except Exception as exc:  # what `output.command` did not see (parsing, a lazy import)
        # SystemExit (click's own exits and usage errors) and KeyboardInterrupt (130,
        # `output.command`) are BaseException: they pass. Imports here, not above:
        # the Stop hook's path stays lean.
        from ..errors import BridgeError

        if isinstance(exc, BridgeError):  # an error we know: its own exit code
            from .output import report

            sys.exit(report(exc, "--json" in args))
        from .bug import report_bug

        sys.exit(report_bug(exc, as_json="--json" in args))


def _dispatch(args: list[str]) -> None:
    if len(args) >= 2 and args[0] == "inbox" and args[1] == "hook":
        from ..hooks.process import run_hook_cli

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
