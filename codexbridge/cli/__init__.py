"""Console entry point, and the commands that run before click.

The plugin's hook (`plugin hook`, `inbox hook`) runs at every Claude Code stop, and it
and `mcp` are waited for at every session start, so they are dispatched before click
(~40 ms) and everything else is imported: `plugin` here (the session's mailbox, then the
hook), `mcp` on stdio to its quick start (`mcp/startup_cache.py`). Every other command
goes through the click app (`app.py`).
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
        # `command.command`) are BaseException: they pass.
        # lazy, as every import below: the Stop hook's path stays near `python -c pass`
        from ..errors import BridgeError

        if isinstance(exc, BridgeError):  # an error we know: its own exit code
            from .command import report

            sys.exit(report(exc, "--json" in args))
        from .bug import report_bug

        sys.exit(report_bug(exc, as_json="--json" in args))


def _dispatch(args: list[str]) -> None:
    if len(args) >= 2 and args[0] == "inbox" and args[1] == "hook":
        # lazy: the Stop hook imports the hook alone, no click
        from ..hooks.process import run_hook_cli

        sys.exit(run_hook_cli(args[2:]))
    if args[:1] == ["plugin"]:
        outcome = plugin(args[1:])
        if isinstance(outcome, int):
            sys.exit(outcome)
        args = outcome  # the watcher: `inbox watch`, through click
    if args[:1] == ["mcp"]:
        # lazy: the agent waits for this server's start-up, answered before click loads
        from ..mcp.startup_cache import launch

        status = launch(args[1:])
        if status is not None:
            sys.exit(status)
    from .app import cli  # lazy: the hook and the MCP quick start never load click

    try:
        cli.main(args=args, prog_name="codexbridge")
    except SystemExit as done:
        # click's own output (help, usage, version) to a reader that went away exits 1:
        # it is our documented 74, as for every command's output.
        if done.code == 1:
            from .command import reader_gone, stdout_gone  # lazy: `--help` loads app.py only

            if stdout_gone():
                sys.exit(reader_gone())
        raise


# -- the plugin's commands, without click ------------------------------------------------

PLUGIN_USAGE = "usage: codexbridge plugin hook [start] | watch [start] | name"
WATCH_TIMEOUT = "600"  # s a plugin watcher waits; hooks.json gives it 660 before a kill


def plugin(argv: list[str]) -> int | list[str]:
    """`plugin hook|watch|name [start]`: what the Claude plugin's launcher
    (claude_plugin/bin/codexbridge-plugin) runs once it has found codexbridge — the Stop
    / SessionStart hook, the asyncRewake watcher, the session's mailbox name. The mailbox
    is decided here (setup/mailbox.for_session), from the environment Claude Code gives
    its hooks; the launcher reads no claim. A hook or a watcher must never fail Claude:
    a problem naming the mailbox ends in exit 0 (the hook logs it). The exit status, or
    for the watcher the `inbox watch` command to run."""
    what, start = (argv[0] if argv else ""), argv[1:2] == ["start"]
    if what not in ("hook", "watch", "name"):
        sys.stderr.write(PLUGIN_USAGE + "\n")
        return 2
    if what == "hook":
        # lazy: the Stop hook imports the hook alone, no click
        from ..hooks.process import log, run_hook_cli
    try:
        name = _session_mailbox(start)
    except Exception as exc:
        if what == "hook":
            log(f"hook not run: no mailbox for this session: {exc!r}", with_traceback=True)
            return 0
        if what == "watch":
            return 0
        raise
    if what == "hook":
        return run_hook_cli(["--as", name])
    if what == "name":
        sys.stdout.write(name + "\n")
        return 0
    return ["inbox", "watch", "--as", name, "--timeout", WATCH_TIMEOUT]


def _session_mailbox(start: bool) -> str:
    # lazy: only the plugin's commands (the Stop hook among them) name a session's mailbox
    from ..inbox.location import inbox_dir
    from ..setup.mailbox import for_session

    return for_session(inbox_dir(), os.environ, os.getcwd(), start=start)
