"""The plugin's hot commands without click: Claude Code waits for each at every session
start, so `cli/__init__.py` dispatches them here before click (~40 ms) is imported.

Each returns its exit status, or None when its arguments are not the plain shape the
plugin passes or something needs reporting — then the click command runs as usual,
parses them and says what is wrong.
"""

from __future__ import annotations

import os
import sys


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
