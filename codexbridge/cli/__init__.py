"""Console entry point, and the commands that run before click.

`inbox hook` runs at every Claude Code stop, and `setup mailbox` and `mcp` are waited
for at every session start, so they are dispatched before click (~40 ms) and everything
else is imported: `setup mailbox` here (`setup_mailbox`), `mcp` on stdio to its quick
start (`mcp/startup_cache.py`). Every other command goes through the click app (`app.py`).
An unexpected exception anywhere is a bug: one line, the traceback in the log, exit 70
(`bug.py`).

    app.py         the click application; the lazy group every command group uses
    command.py     what every command shares: options, output and errors, exit, logging
    bug.py         an unexpected exception: exit 70, the traceback in the log
    *_cmd.py       one module per command group (imported only when it runs)
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    try:
        _dispatch(args)
    except Exception as exc:  # what `command.command` did not see (parsing, a lazy import)
        # SystemExit (click's own exits and usage errors) and KeyboardInterrupt (130,
        # `command.command`) are BaseException: they pass. Imports here, not above:
        # the Stop hook's path stays lean.
        from ..errors import BridgeError

        if isinstance(exc, BridgeError):  # an error we know: its own exit code
            from .command import report

            sys.exit(report(exc, "--json" in args))
        from .bug import report_bug

        sys.exit(report_bug(exc, as_json="--json" in args))


def _dispatch(args: list[str]) -> None:
    if len(args) >= 2 and args[0] == "inbox" and args[1] == "hook":
        from ..hooks.process import run_hook_cli

        sys.exit(run_hook_cli(args[2:]))
    if args[:2] == ["setup", "mailbox"]:
        status = setup_mailbox(args[2:])
        if status is not None:
            sys.exit(status)
    if args[:1] == ["mcp"]:
        # The agent waits for this server's start-up: answered before click loads.
        from ..mcp.startup_cache import launch

        status = launch(args[1:])
        if status is not None:
            sys.exit(status)
    from .app import cli

    try:
        cli.main(args=args, prog_name="codexbridge")
    except SystemExit as done:
        # click's own output (help, usage, version) to a reader that went away exits 1:
        # it is our documented 74, as for every command's output.
        if done.code == 1:
            from .command import reader_gone, stdout_gone

            if stdout_gone():
                sys.exit(reader_gone())
        raise


# -- the plugin's hot commands, without click -------------------------------------------
# Each returns its exit status, or None when its arguments are not the plain shape the
# plugin passes or something needs reporting — then the click command runs as usual,
# parses them and says what is wrong.

def _options(argv: list[str], names: tuple[str, ...]) -> dict[str, str] | None:
    """`--name value` / `--name=value` pairs, each name at most once; None for anything
    else (click's to parse and report)."""
    found: dict[str, str] = {}
    rest = list(argv)
    while rest:
        word = rest.pop(0)
        name, eq, value = word.partition("=")
        if name not in names or name in found:
            return None
        if not eq:
            if not rest:
                return None
            value = rest.pop(0)
        found[name] = value
    return found


def mailbox_name(session: str, project: str | None) -> str:
    """This Claude session's mailbox name, claimed (`setup mailbox`, the plugin's
    SessionStart hooks; setup/mailbox.py)."""
    from ..inbox.location import inbox_dir
    from ..setup.mailbox import claim

    pid_text = os.environ.get("CLAUDE_PID", "")
    pid = int(pid_text) if pid_text.isdigit() else None
    return claim(inbox_dir(), project or os.getcwd(), session, pid)


def setup_mailbox(argv: list[str]) -> int | None:
    """`setup mailbox [--session ID] [--project DIR]` (cli/setup_cmd.py)."""
    opts = _options(argv, ("--session", "--project"))
    if opts is None:
        return None
    from ..errors import BridgeError
    from ..host.private import check_state_dirs

    try:
        check_state_dirs()
    except BridgeError:
        return None  # click's run of the command reports it, as for every command
    sys.stdout.write(mailbox_name(opts.get("--session", ""), opts.get("--project")) + "\n")
    return 0
