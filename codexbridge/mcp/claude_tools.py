"""The `claude_*` tools (role codex): what Codex calls to leave mail for a Claude Code
session — list the mailboxes, peek at one, send a message.

The mail lands in the same JSONL mailboxes `codexbridge inbox push` writes, through the
same service (`messages/to_claude.py`, which also holds the one push rule: a name nobody
knows is refused with NO_MAILBOX while others have listeners). The Claude session picks
it up through its Stop hook (or the asyncRewake watcher). These tools only read and
append — consuming mail is the hook's job.

The mailbox service is imported by the tool bodies on their first call, not at start-up.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from ..messages import to_claude as inbox
from ..messages.envelope import who_sends
from ..messages.routing import THREAD_ENV
from .results import Data, Outcome, guarded, warning
from .runtime import Runtime, calling_thread

if TYPE_CHECKING:
    from ..inbox.lines import Mail
    from ..messages.to_claude import RequestReceipt

PEEK_TEXT_CHARS = 2000

MailboxParam = Annotated[str | None, Field(
    description="Mailbox name ([A-Za-z0-9._-]). Default: $CODEX_BRIDGE_MAILBOX, else the "
                "Claude session listening in this thread's project, else 'default'. "
                "claude_mailboxes_list shows the names Claude sessions listen on.")]

Tool = Callable[..., Awaitable[CallToolResult]]


class ClaudeTools:
    """The tools of role codex, bound to one server's runtime (`server.py` wires them
    up). Each method is what the SDK calls: its signature is the tool's input schema,
    its docstring the description; the work is in the functions below."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    async def claude_mailboxes_list(
        self,
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many mailboxes "
                                                              "(sorted by name).")] = 50,
    ) -> CallToolResult:
        """List the Claude Code mailboxes: pending and rejected counts, which Claude
        session listens on each (cwd, session id, last seen), and whether mail reaches
        it at once (reach.live, with the session busy or idle) or at its next stop."""
        return await guarded("claude_mailboxes_list", list_mailboxes(self.rt, limit))

    async def claude_mailbox_peek(
        self,
        mailbox: MailboxParam = None,
        maxMessages: Annotated[int, Field(ge=1, le=200, description=(
            "Show at most this many of the waiting messages, oldest first (each text is "
            f"cut at {PEEK_TEXT_CHARS} characters)."))] = 20,
    ) -> CallToolResult:
        """Show the mail waiting in a Claude mailbox without consuming it (the Claude
        session's Stop hook delivers and removes it)."""
        return await guarded("claude_mailbox_peek", peek(self.rt, mailbox, maxMessages))

    async def claude_message_send(  # `sender` is the wire's `from` (see wire_alias)
        self,
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
        newConversation: Annotated[bool, Field(description=(
            "Start a new conversation with its own hop budget — what to do after "
            "HOP_LIMIT when the exchange is still making progress."))] = False,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Leave a message in a Claude Code session's mailbox. Returns the message id at
        once; Claude answers later (not as this tool's result) — with expectReply its
        answer arrives in this thread as a new turn. Each message spends one hop of the
        conversation's budget (HOP_LIMIT when it is spent)."""
        body = send_mail(self.rt, text, mailbox, sender, new=new, expect_reply=expectReply,
                         conversation=conversation, thread=calling_thread(ctx),
                         new_conversation=newConversation)
        return await guarded("claude_message_send", body)


def wire_alias(fn: Tool, name: str, wire: str) -> Tool:
    """`fn` with parameter `name` spelled `wire` on the wire (`from` is a Python keyword).

    The SDK reads the schema from the signature (where the Field alias says `wire`) and
    calls the tool with the wire names as keywords, so the wrapper renames one back.
    """
    @functools.wraps(fn)
    async def call(**kwargs: object) -> CallToolResult:
        if wire in kwargs:
            kwargs[name] = kwargs.pop(wire)
        return await fn(**kwargs)

    call.__signature__ = inspect.signature(fn, eval_str=True)  # type: ignore[attr-defined]
    return call


# -- the tool bodies -------------------------------------------------------------------------

def _listener_view(rec: Mapping[str, object] | None) -> dict[str, object] | None:
    if rec is None:
        return None
    return {k: rec[k] for k in ("cwd", "session_id", "last_seen", "via") if k in rec}


def _mail_view(mail: Mail) -> Data:
    text = mail.text
    cut = len(text) > PEEK_TEXT_CHARS
    return {"id": mail.mail_id, "at": mail.at, "from": mail.sender, "to": mail.to,
            "text": text[:PEEK_TEXT_CHARS], "textTruncated": cut, "textChars": len(text)}


async def list_mailboxes(rt: Runtime, limit: int) -> Outcome:
    directory, summaries = inbox.summaries(rt.inbox())
    rows = [{"name": s.name, "pending": s.pending, "rejected": s.rejected,
             "inFlight": s.in_flight, "listener": _listener_view(s.listener),
             "reach": inbox.reach(directory, s.name) if s.listener else None}
            for s in summaries]
    summary = (f"{len(rows)} mailbox(es) in {directory}" + "".join(
        f"\n- {s.name}: {s.pending} pending, "
        + ("listened on" if s.listener else "no listener") for s in summaries[:limit]))
    return Outcome({"inboxDir": directory, "total": len(rows), "mailboxes": rows[:limit],
                    "truncated": len(rows) > limit}, summary)


async def peek(rt: Runtime, mailbox: str | None, max_messages: int) -> Outcome:
    known, peeked = inbox.peek(mailbox, inbox=rt.inbox(), project=os.getcwd())
    name = peeked.name
    shown = [_mail_view(m) for m in peeked.mails[:max_messages]]
    data: Data = {"mailbox": name, "pending": len(peeked.mails), "messages": shown,
                  "truncated": len(peeked.mails) > len(shown),
                  "inFlight": peeked.in_flight, "unreadable": len(peeked.unreadable),
                  "rejected": peeked.rejected_count,
                  "listener": _listener_view(known.listeners.get(name))}
    summary = f'mailbox "{name}": {len(peeked.mails)} message(s) waiting'
    if peeked.in_flight:
        summary += f", {peeked.in_flight} being delivered"
    return Outcome(data, summary)


async def send_mail(rt: Runtime, text: str, mailbox: str | None, sender: str | None, *,
                    new: bool, expect_reply: bool, conversation: str | None,
                    thread: str | None, new_conversation: bool = False) -> Outcome:
    # The mail cap (CODEX_BRIDGE_MAIL_MAX) is checked by the service, as for
    # `inbox push`; big mail reaches Claude as a preview and a file.
    env = dict(os.environ)
    if thread:
        env[THREAD_ENV] = thread
    # codex starts this server in the calling thread's directory (measured):
    # with no mailbox named, the Claude session listening in that project.
    sent = inbox.request(text, to=mailbox, sender=sender, inbox=rt.inbox(), new=new,
                         expect_reply=expect_reply, thread=thread,
                         conversation=conversation, env=env, project=os.getcwd(),
                         new_conversation=new_conversation,
                         sent_by=who_sends(env, mcp_role=rt.settings.role,
                                           calling_thread=thread))
    return _mail_left(sent)


def _mail_left(sent: RequestReceipt) -> Outcome:
    receipt = sent.push
    mail = receipt.mail
    warnings = [warning("NO_LISTENER", receipt.warning)] if receipt.warning else []
    # The first five fields are claude-codex-bridge's send result, kept so
    # prompts written for it keep working.
    data: Data = {"messageId": mail.mail_id, "mailbox": mail.to, "queuedAt": mail.at,
                  # "live": already in the running Claude session (its cross-session
                  # inbox); "queued": at its next stop (deliveryReason says why)
                  "delivery": "live" if receipt.live else "queued",
                  "delivered": receipt.live,
                  "deliveryReason": receipt.delivery_reason,
                  "id": mail.mail_id, "from": mail.sender, "at": mail.at,
                  "mailboxFile": receipt.mailbox_file,
                  "listener": _listener_view(receipt.listener),
                  "request": sent.request, "conversation": sent.conversation,
                  "hop": sent.hop, "maxHops": sent.max_hops,
                  "expectReplyFrom": sent.expect_reply_from}
    how = ("delivered live into the running Claude session"
           if receipt.live else "waiting for the session's next stop")
    summary = (f'left message {mail.mail_id} in mailbox "{mail.to}", {how} '
               f"(conversation {sent.conversation}, hop {sent.hop}/{sent.max_hops})")
    if sent.expect_reply_from:
        summary += f"; Claude's answer will arrive in thread {sent.expect_reply_from}"
    return Outcome(data, summary, warnings)
