"""How codex's config.toml starts codexbridge's role-codex MCP server: through a one-line
/bin/sh launcher, so that a codexbridge uninstalled before `setup codex --remove` (`pipx
uninstall` takes the command away with the package) is named, with its fix, in the
warning Codex shows — instead of "No such file or directory (os error 2)". Written by
`setup codex`, read back by `doctor`.

Measured on codex 0.171.0 (SETUP.md, "Uninstall"): a server that fails to start is one
warning per session ("⚠ N warnings · f2 to view": "MCP client for `codexbridge` failed
to start: …"); the server's stderr is never shown, but a JSON-RPC error it answers to
`initialize` is, word for word. So the launcher execs the installed command when it is
there, and otherwise reads codex's `initialize` and answers it with that error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

SHELL = "/bin/sh"
COMMENT = ("# /bin/sh runs the codexbridge command at the end of `args`; once codexbridge is "
           "uninstalled,\n# it tells codex so (and how to take this block out) instead of "
           "failing with no reason")
NAME = "codexbridge-mcp"  # the launcher's $0: how `codex mcp get` and doctor tell it apart

# $1 the error's message (a JSON string), then the command. The id is read from codex's
# first line (`{"jsonrpc":"2.0","id":0,"method":"initialize",…}`).
LAUNCHER = (
    'm=$1; shift; [ -f "$1" ] && [ -x "$1" ] && exec "$@"; IFS= read -r l; '
    "i=$(printf '%s' \"$l\" | sed -n 's/^{[^{]*\"id\": *\\([0-9][0-9]*\\).*/\\1/p'); "
    "printf '{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32000,\"message\":%s}}\\n' "
    '"${i:-0}" "$m"')


def missing_message(command: str, config: str) -> str:
    return (f"codexbridge is not installed any more ({command} is gone): delete the "
            f"codexbridge block from {config}, or run `codexbridge setup codex --remove` "
            "(see Uninstall in codexbridge's SETUP.md)")


def launch(argv: Sequence[str], config: str) -> tuple[str, list[str]]:
    """`command` and `args` of the table that runs `argv` through the launcher."""
    message = json.dumps(missing_message(argv[0], config))
    return SHELL, ["-c", LAUNCHER, NAME, message, *argv]


def launched(command: str, args: Sequence[str]) -> list[str]:
    """The command line a table runs: through the launcher, or as it is."""
    if command == SHELL and len(args) > 4 and args[0] == "-c" and args[2] == NAME:
        return [*args[4:]]
    return [command, *args]
