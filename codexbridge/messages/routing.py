"""Where a reply goes, and which sends a loop guard refuses. Pure: env and records in.

The reply to a Claude → Codex request goes to the mailbox of the exact Claude session
that asked. Claude Code gives everything it starts (its Bash tool, hooks, MCP servers)
`CLAUDE_CODE_MESSAGING_SOCKET` and `CLAUDE_CODE_SESSION_ID`, and the Stop hook records
both with its mailbox registration — so the calling session's mailbox is looked up, not
guessed from a directory. Else `$CODEX_BRIDGE_MAILBOX`; else nobody, and the receipt
says the reply stays readable in `talk status`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

SOCKET_ENV = "CLAUDE_CODE_MESSAGING_SOCKET"
SESSION_ENV = "CLAUDE_CODE_SESSION_ID"
THREAD_ENV = "CODEX_THREAD_ID"  # set by codex for the commands it runs (measured)
CLAUDE_ENV = ("CLAUDE_CODE_SESSION_ID", "CLAUDECODE")  # set by Claude Code (measured)


class ReplyTo(NamedTuple):
    mailbox: str | None
    how: str  # --reply-to | calling session | $CODEX_BRIDGE_MAILBOX | none


def reply_mailbox(explicit: str | None, env: Mapping[str, str],
                  listeners: Mapping[str, Mapping[str, object]]) -> ReplyTo:
    if explicit:
        return ReplyTo(explicit, "--reply-to")
    socket, session = env.get(SOCKET_ENV), env.get(SESSION_ENV)
    for key, value in ((socket, "messaging_socket"), (session, "session_id")):
        if not key:
            continue
        matches = sorted(name for name, rec in listeners.items() if rec.get(value) == key)
        if matches:
            return ReplyTo(matches[0], "calling session")
    if env.get("CODEX_BRIDGE_MAILBOX"):
        return ReplyTo(env["CODEX_BRIDGE_MAILBOX"], "$CODEX_BRIDGE_MAILBOX")
    return ReplyTo(None, "none")


def sending_from_thread(env: Mapping[str, str]) -> str | None:
    """The Codex thread whose turn is running this process, if codex started it."""
    return env.get(THREAD_ENV) or None
