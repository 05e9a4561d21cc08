"""Role codex: the tools Codex calls to leave mail for a Claude Code session.

The mail lands in the same JSONL mailboxes `codexbridge inbox push` writes, through the
same service (`inbox/service.py`, which also holds the one push rule: a name nobody
knows is refused with NO_MAILBOX while others have listeners). The Claude session picks
it up through its Stop hook (or the asyncRewake watcher). These tools only read and
append — consuming mail is the hook's job.

The mailbox service is imported by the tool bodies on their first call, not at start-up.
"""

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from .results import warning
from .runtime import Runtime
from .tooling import READ_ONLY, SEND, Outcome, add_tool, guarded

if TYPE_CHECKING:
    from ..inbox.lines import Mail

PEEK_TEXT_CHARS = 2000

TOOLS = ("claude_mailboxes_list", "claude_mailbox_peek", "claude_message_send")

MailboxParam = Annotated[str | None, Field(
    description="Mailbox name ([A-Za-z0-9._-]). Default: $CODEX_BRIDGE_MAILBOX, else the "
                "Claude session listening in this thread's project, else 'default'. "
                "claude_mailboxes_list shows the names Claude sessions listen on.")]


def _listener_view(rec: dict[str, Any] | None) -> dict[str, Any] | None:
    if rec is None:
        return None
    return {k: rec.get(k) for k in ("cwd", "session_id", "last_seen", "via") if k in rec}


def _mail_view(mail: "Mail") -> dict[str, Any]:
    text = mail.text
    cut = len(text) > PEEK_TEXT_CHARS
    return {"id": mail.mail_id, "at": mail.at, "from": mail.sender, "to": mail.to,
            "text": text[:PEEK_TEXT_CHARS], "textTruncated": cut, "textChars": len(text)}


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


def calling_thread(ctx: Context | None) -> str | None:
    """The Codex thread whose model made this tool call.

    Codex gives its MCP servers no CODEX_THREAD_ID (their environment is HOME, LANG,
    PATH, TERM only); the thread id travels in each call's `_meta` instead, as
    `threadId` and in `x-codex-turn-metadata` (docs/protocol-notes.md, measured).
    """
    try:
        meta = ctx.request_context.meta if ctx is not None else None
    except ValueError:  # not inside a request
        return None
    if not meta:
        return None
    tid = meta.get("threadId")
    if not isinstance(tid, str):
        turn = meta.get("x-codex-turn-metadata")
        tid = turn.get("thread_id") if isinstance(turn, dict) else None
    return tid if isinstance(tid, str) and tid else None


def register(server: MCPServer, rt: Runtime) -> None:
    """Add the codex-role tools to `server`."""

    async def claude_mailboxes_list(
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many mailboxes "
                                                              "(sorted by name).")] = 50,
    ) -> CallToolResult:
        """List the Claude Code mailboxes: pending and rejected counts, which Claude
        session listens on each (cwd, session id, last seen), and whether mail reaches
        it at once (reach.live, with the session busy or idle) or at its next stop."""
        async def body() -> Outcome:
            from ..inbox import service as inbox

            directory, summaries = inbox.summaries(rt.inbox())
            rows = [{"name": s.name, "pending": s.pending, "rejected": s.rejected,
                     "inFlight": s.in_flight, "listener": _listener_view(s.listener),
                     "reach": inbox.reach(directory, s.name) if s.listener else None}
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
            import os

            from ..inbox import service as inbox

            known, peeked = inbox.peek(mailbox, inbox=rt.inbox(), project=os.getcwd())
            name = peeked.name
            listeners = known.listeners
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
        new: Annotated[bool, Field(description=(
            "Create the mailbox if no session listens on it yet. Without it, a name "
            "nobody knows is refused (NO_MAILBOX) while other mailboxes have "
            "listeners: a typo must not lose mail."))] = False,
        expectReply: Annotated[bool, Field(description=(
            "Ask for an answer: when the Claude session has handled this message, its "
            "final reply comes back into this Codex thread as a new turn (no need to "
            "poll). The thread is the one this call comes from."))] = False,
        conversation: Annotated[str | None, Field(description=(
            "The conversation this continues (its hop budget). Default: the one this "
            "thread is in (a bridge message started the turn), else a new one."))] = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Leave a message in a Claude Code session's mailbox. Returns the message id at
        once; Claude answers later (not as this tool's result) — with expectReply its
        answer arrives in this thread as a new turn. Each message spends one hop of the
        conversation's budget (HOP_LIMIT when it is spent)."""
        async def body() -> Outcome:
            import os

            from ..conversation.routing import THREAD_ENV
            from ..inbox import service as inbox

            # The mail cap (CODEX_BRIDGE_MAIL_MAX) is checked by the service, as for
            # `inbox push`; big mail reaches Claude as a preview and a file.
            env = dict(os.environ)
            thread = calling_thread(ctx)
            if thread:
                env[THREAD_ENV] = thread
            # codex starts this server in the calling thread's directory (measured):
            # with no mailbox named, the Claude session listening in that project.
            sent = inbox.request(text, to=mailbox, sender=sender, inbox=rt.inbox(), new=new,
                                 expect_reply=expectReply, thread=thread,
                                 conversation=conversation, env=env, project=os.getcwd())
            receipt = sent.push
            mail = receipt.mail
            warnings = [warning("NO_LISTENER", receipt.warning)] if receipt.warning else []
            # The first five fields are claude-codex-bridge's send result, kept so
            # prompts written for it keep working.
            data = {"messageId": mail.mail_id, "mailbox": mail.to, "queuedAt": mail.at,
                    # "live": already in the running Claude session (its cross-session
                    # inbox); "queued": at its next stop (deliveryReason says why)
                    "delivery": "live" if receipt.delivery == "live" else "queued",
                    "delivered": receipt.delivery == "live",
                    "deliveryReason": receipt.delivery_reason,
                    "id": mail.mail_id, "from": mail.sender, "at": mail.at,
                    "mailboxFile": receipt.mailbox_file,
                    "listener": _listener_view(receipt.listener),
                    "request": sent.request, "conversation": sent.conversation,
                    "hop": sent.hop, "maxHops": sent.max_hops,
                    "expectReplyFrom": sent.expect_reply_from}
            how = ("delivered live into the running Claude session"
                   if receipt.delivery == "live" else "waiting for the session's next stop")
            summary = (f'left message {mail.mail_id} in mailbox "{mail.to}", {how} '
                       f"(conversation {sent.conversation}, hop {sent.hop}/{sent.max_hops})")
            if sent.expect_reply_from:
                summary += f"; Claude's answer will arrive in thread {sent.expect_reply_from}"
            return Outcome(data, summary, warnings)
        return await guarded("claude_message_send", body)

    add_tool(server, claude_mailboxes_list, READ_ONLY)
    add_tool(server, claude_mailbox_peek, READ_ONLY)
    add_tool(server, _wire_alias(claude_message_send, "sender", "from"), SEND)
