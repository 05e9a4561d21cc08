"""Role codex: the tools Codex calls to leave mail for a Claude Code session.

The mail lands in the same JSONL mailboxes `codexbridge inbox push` writes; the Claude
session picks it up through its Stop hook (or the asyncRewake watcher). These tools
only read and append — consuming mail is the hook's job.

Mistyped mailbox names are the classic way to lose mail silently, so a send is
refused (NO_MAILBOX) when other mailboxes have listeners and this name is unknown
(no listener, no mail, no files). On a fresh set-up with no listener anywhere the
mail is stored with a warning, as `inbox push` does.
"""

import functools
import inspect
import os
from collections.abc import Awaitable, Callable
from contextlib import contextmanager
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from ..errors import MailboxNameError
from ..inbox import store as mail_store
from ..inbox.lines import Mail, new_mail
from ..inbox.listeners import closest_name, read_listeners
from ..inbox.location import ensure_private_dir, mail_path
from ..inbox.names import default_mailbox, validate_name
from .results import ToolFailure, warning
from .runtime import Runtime
from .tooling import READ_ONLY, SEND, Outcome, add_tool, guarded

DEFAULT_SENDER = "codex"
PEEK_TEXT_CHARS = 2000

TOOLS = ("claude_mailboxes_list", "claude_mailbox_peek", "claude_message_send")

MailboxParam = Annotated[str | None, Field(
    description="Mailbox name ([A-Za-z0-9._-]). Default: $CODEX_BRIDGE_MAILBOX, else "
                "'default'. claude_mailboxes_list shows the names Claude sessions listen on.")]


@contextmanager
def _io(code: str, action: str) -> Any:
    try:
        yield
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise ToolFailure(code, f"cannot {action}: {exc.strerror or exc}{where}",
                          {"errno": exc.errno}) from exc


def _name(raw: str | None, what: str) -> str:
    try:
        return validate_name(raw if raw else default_mailbox())
    except MailboxNameError as exc:
        raise ToolFailure("INVALID_ARGUMENT", f"{what}: {exc.message}",
                          {"parameter": what}) from None


def _listener_view(rec: dict[str, Any] | None) -> dict[str, Any] | None:
    if rec is None:
        return None
    return {k: rec.get(k) for k in ("cwd", "session_id", "last_seen", "via") if k in rec}


def _mail_view(mail: Mail) -> dict[str, Any]:
    text = mail.text
    cut = len(text) > PEEK_TEXT_CHARS
    return {"id": mail.mail_id, "at": mail.at, "from": mail.sender, "to": mail.to,
            "text": text[:PEEK_TEXT_CHARS], "textTruncated": cut, "textChars": len(text)}


def _unknown_mailbox(name: str, known: list[str], listening: list[str]) -> ToolFailure:
    guess = closest_name(name, listening or known)
    hint = f'; did you mean "{guess}"?' if guess else ""
    return ToolFailure("NO_MAILBOX", (
        f'no Claude session listens on mailbox "{name}" (listening: '
        f'{", ".join(listening) or "none"}){hint}'),
        {"mailbox": name, "mailboxes": known, "listening": listening, "didYouMean": guess})


def _wire_alias(fn: Callable[..., Awaitable[CallToolResult]], name: str, wire: str
                ) -> Callable[..., Awaitable[CallToolResult]]:
    """`fn` with parameter `name` spelled `wire` on the wire (`from` is a Python keyword).

    The SDK reads the schema from the signature (where the Field alias says `wire`) and
    calls the tool with the wire names as keywords, so the wrapper renames one back.
    """
    @functools.wraps(fn)
    async def call(**kwargs: Any) -> CallToolResult:
        if wire in kwargs:
            kwargs[name] = kwargs.pop(wire)
        return await fn(**kwargs)

    call.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
    return call


def register(server: MCPServer, rt: Runtime) -> None:
    """Add the codex-role tools to `server`."""

    async def claude_mailboxes_list(
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many mailboxes "
                                                              "(sorted by name).")] = 50,
    ) -> CallToolResult:
        """List the Claude Code mailboxes: pending and rejected counts, and which Claude
        session listens on each (cwd, session id, last seen)."""
        async def body() -> Outcome:
            directory = rt.inbox()
            with _io("MAILBOX_READ_FAILED", "list mailboxes"):
                summaries = mail_store.summarize(directory, read_listeners(directory))
            rows = [{"name": s.name, "pending": s.pending, "rejected": s.rejected,
                     "inFlight": s.in_flight, "listener": _listener_view(s.listener)}
                    for s in summaries]
            shown = rows[:limit]
            summary = (f"{len(rows)} mailbox(es) in {directory}" + "".join(
                f"\n- {r['name']}: {r['pending']} pending, "
                + ("listened on" if r["listener"] else "no listener") for r in shown))
            return Outcome({"inboxDir": directory, "total": len(rows), "mailboxes": shown,
                            "truncated": len(rows) > len(shown)}, summary)
        return await guarded("claude_mailboxes_list", body)

    async def claude_mailbox_peek(
        mailbox: MailboxParam = None,
        maxMessages: Annotated[int, Field(ge=1, le=200, description=(
            "Show at most this many of the waiting messages, oldest first (each text is "
            f"cut at {PEEK_TEXT_CHARS} characters)."))] = 20,
    ) -> CallToolResult:
        """Show the mail waiting in a Claude mailbox without consuming it (the Claude
        session's Stop hook delivers and removes it)."""
        async def body() -> Outcome:
            name = _name(mailbox, "mailbox")
            directory = rt.inbox()
            with _io("MAILBOX_READ_FAILED", f"read mailbox {name!r}"):
                listeners = read_listeners(directory)
                known = sorted(set(mail_store.mailbox_names(directory)) | set(listeners))
                if name not in known:
                    raise _unknown_mailbox(name, known, sorted(listeners))
                peeked = mail_store.peek(directory, name)
            shown = [_mail_view(m) for m in peeked.mails[:maxMessages]]
            data = {"mailbox": name, "pending": len(peeked.mails), "messages": shown,
                    "truncated": len(peeked.mails) > len(shown),
                    "inFlight": peeked.in_flight, "unreadable": len(peeked.unreadable),
                    "rejected": peeked.rejected_count,
                    "listener": _listener_view(listeners.get(name))}
            summary = f'mailbox "{name}": {len(peeked.mails)} message(s) waiting'
            if peeked.in_flight:
                summary += f", {peeked.in_flight} being delivered"
            return Outcome(data, summary)
        return await guarded("claude_mailbox_peek", body)

    async def claude_message_send(  # `sender` is the wire's `from` (see _wire_alias)
        text: Annotated[str, Field(description="The message for Claude Code. It reaches the "
                                               "Claude session when it next stops (its Stop "
                                               "hook), or at once if it is idle with the "
                                               "watcher.")],
        mailbox: MailboxParam = None,
        sender: Annotated[str | None, Field(alias="from", description=(
            "Sender name shown to Claude. Default: $CODEX_BRIDGE_FROM, else 'codex'."))] = None,
    ) -> CallToolResult:
        """Leave a message in a Claude Code session's mailbox. Returns the message id at
        once; Claude answers later (not as this tool's result)."""
        async def body() -> Outcome:
            rt.check_text(text)
            name = _name(mailbox, "mailbox")
            who = _name(sender or os.environ.get("CODEX_BRIDGE_FROM") or DEFAULT_SENDER, "from")
            directory = rt.inbox()
            with _io("MAILBOX_READ_FAILED", "look up mailboxes"):
                listeners = read_listeners(directory)
                known = sorted(set(mail_store.mailbox_names(directory)) | set(listeners))
            if listeners and name not in known:
                raise _unknown_mailbox(name, known, sorted(listeners))
            mail = new_mail(text, to=name, sender=who)
            with _io("MAILBOX_WRITE_FAILED", f"write to mailbox {name!r}"):
                ensure_private_dir(directory)
                mail_store.push(directory, mail)
            warnings = []
            if name not in listeners:
                warnings.append(warning("NO_LISTENER", (
                    f'no Claude session has listened on "{name}" yet; the mail is kept until '
                    f'a session hooked as "{name}" stops (codexbridge install-hook --as {name})')))
            data = {"id": mail.mail_id, "mailbox": name, "from": who, "at": mail.at,
                    "mailboxFile": mail_path(directory, name),
                    "listener": _listener_view(listeners.get(name))}
            return Outcome(data, f'left message {mail.mail_id} in mailbox "{name}"', warnings)
        return await guarded("claude_message_send", body)

    add_tool(server, claude_mailboxes_list, READ_ONLY)
    add_tool(server, claude_mailbox_peek, READ_ONLY)
    add_tool(server, _wire_alias(claude_message_send, "sender", "from"), SEND)
