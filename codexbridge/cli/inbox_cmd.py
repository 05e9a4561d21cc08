"""`codexbridge inbox …`: the reverse channel's CLI (`install-hook` is in setup_cmd.py).

The mailbox logic lives in `codexbridge.inbox`; this module parses options, turns
OS errors into MailboxError (exit 8), and prints for people or (`--json`) scripts.
`inbox hook` is normally dispatched before click is imported (see `cli/__init__.py`);
the click command here exists for `--help` listings and in-process callers.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import click

from ..error_tables import exit_help
from ..errors import LoopGuardError, MailboxError, MailboxReadError, UsageError
from ..hooks.process import log, parse_payload, run_hook_cli
from ..hooks.process import read_stdin as read_hook_input
from ..hooks.watcher import run_watch
from ..host.limits import mail_max, mail_refused
from ..host.mailboxes import inbox_dir, mailbox_name
from ..inbox import store
from ..inbox.lines import Mail, Rejected
from ..inbox.location import rejected_path
from ..inbox.peek import read_rejected
from ..messages import to_claude as inbox_service
from ..messages.listeners import WATCH_INTERVAL as DEFAULT_INTERVAL
from ..messages.listeners import WATCH_TIMEOUT as DEFAULT_TIMEOUT
from ..messages.listeners import Listener
from ..messages.render import render_mail, sender_of
from .command import command, echo, emit_json, read_stdin

if TYPE_CHECKING:
    from ..jsontypes import JsonObject

F = TypeVar("F", bound=Callable[..., object])
INBOX_EXIT_HELP = exit_help(UsageError, MailboxError, LoopGuardError)


def _mailbox_option(flag: str, what: str, by_project: bool = False) -> Callable[[F], F]:
    where = (", else the one Claude session listening in this directory's project"
             if by_project else "")
    return click.option(flag, "name", default=None, metavar="NAME",
                        help=f"{what} [default: $CODEX_BRIDGE_MAILBOX{where}, else "
                             "'default']")


def _rejected_json(bad: Rejected) -> JsonObject:
    return {"lineno": bad.lineno, "reason": bad.reason, "source": bad.source,
            "line": bad.raw.decode("utf-8", errors="replace")}


def _print_mails(mails: list[Mail]) -> None:
    for i, mail in enumerate(mails, start=1):
        bits = [f"from {sender_of(mail)}"]
        if mail.at:
            bits.append(mail.at)
        if mail.mail_id:
            bits.append(f"id {mail.mail_id}")
        echo(f"[{i}] " + " · ".join(bits))
        for line in mail.text.splitlines() or [""]:
            echo(f"    {line}")


@click.group("inbox", context_settings={"help_option_names": ["-h", "--help"]},
             epilog=INBOX_EXIT_HELP)
def inbox() -> None:
    """Mailboxes Codex uses to talk back into Claude Code.

    \b
    One JSONL file per mailbox name in $CODEX_BRIDGE_INBOX_DIR (default
    <state dir>/inbox). A Claude Code session reads its mailbox through the Stop
    hook (`inbox hook --as NAME`, see `codexbridge install-hook`) and, when idle,
    through the asyncRewake watcher (`inbox watch`). Mail is delivered once.
    """


@inbox.command("push", epilog=INBOX_EXIT_HELP)
@click.option("--to", "to", default=None, metavar="NAME",
              help="Mailbox to write to [default: $CODEX_BRIDGE_MAILBOX, else the one Claude "
                   "session listening in this directory's project, else 'default'].")
@click.option("--from", "sender", default=None, metavar="NAME",
              help="Sender shown to Claude [default: $CODEX_BRIDGE_FROM, else 'codex'].")
@click.option("--new", is_flag=True,
              help="Create the mailbox even though no session listens on it yet.")
@click.option("--expect-reply", is_flag=True,
              help="Claude's answer (its final message after handling this) is sent back "
                   "into the asking Codex thread as a reply turn.")
@click.option("--thread", metavar="ID",
              help="The asking thread, for --expect-reply [default: $CODEX_THREAD_ID, which "
                   "codex sets for the commands it runs].")
@click.option("--conversation", metavar="ID",
              help="Conversation (hop budget) this request belongs to [default: the one the "
                   "running Codex turn is handling, else a new one].")
@click.option("--new-conversation", is_flag=True,
              help="Start a new conversation with its own hop budget (what a push refused "
                   "over budget does to go on).")
@click.option("--interrupt", is_flag=True,
              help="Live delivery cuts the reply Claude is writing (priority now) instead "
                   "of landing right after its turn.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON receipt.")
@click.argument("text")
@command
def push(to: str | None, sender: str | None, new: bool, expect_reply: bool,
         thread: str | None, conversation: str | None, new_conversation: bool,
         interrupt: bool, text: str, as_json: bool) -> None:
    """Leave TEXT (or stdin, with `-`) in a mailbox; prints the message id.

    A name nobody knows is refused (exit 8, naming the mailboxes that have listeners
    and the closest match) while other mailboxes have listeners — a typo must not lose
    mail; --new creates it anyway. With no listener anywhere yet, the mail is stored
    and a warning says how to hook a session. Each mail is a request in a conversation:
    it spends one hop of its budget (40 by default, `talk budget N`; refused over it,
    exit 9, and so is the same request a third time: a loop) and tells Claude it comes
    from a peer agent, not the human.

    When the listening Claude session is running, the mail goes straight into it
    (Claude Code's cross-session inbox: a new turn within a fraction of a second when
    idle, right after the running turn when busy) and the receipt says `delivered:
    live`; otherwise — or when the user's settings hold or refuse peer messages — it
    waits for the session's next stop (`queued: next stop`, with the reason).
    $CODEX_BRIDGE_LIVE=0 turns live delivery off.
    """
    if text == "-":
        limit = mail_max(os.environ)
        raw = read_stdin(limit + 1)  # (the newline that ends it is not the mail's)
        if raw is None:
            raise UsageError(mail_refused(f"over {limit} bytes on stdin", limit))
        try:
            text = raw.decode("utf-8").rstrip("\n")
        except UnicodeDecodeError as exc:
            raise UsageError(f"stdin is not UTF-8 text ({exc.reason} at byte {exc.start})"
                             ) from exc
    sent = inbox_service.request(text, to=to, sender=sender, new=new,
                                 expect_reply=expect_reply, thread=thread,
                                 conversation=conversation, interrupt=interrupt,
                                 project=os.getcwd(), new_conversation=new_conversation)
    receipt = sent.push
    mail = receipt.mail
    if receipt.warning:
        echo(f"codexbridge: warning: {receipt.warning}", err=True)
    if as_json:
        emit_json({"ok": True, "id": mail.mail_id, "to": mail.to, "from": mail.sender,
                   "at": mail.at, "mailbox_file": receipt.mailbox_file,
                   "listener": receipt.listener, "warning": receipt.warning,
                   "request": sent.request, "conversation": sent.conversation,
                   "hop": sent.hop, "max_hops": sent.max_hops,
                   "expect_reply_from": sent.expect_reply_from,
                   "delivery": receipt.delivery, "delivery_reason": receipt.delivery_reason})
    else:
        echo(mail.mail_id)
        if receipt.listener is not None:
            said = {"live": "delivered: live", "taken": "being delivered"}.get(
                receipt.delivery, "queued: next stop")
            echo(f"codexbridge: {said}" + (f" — {receipt.delivery_reason}"
                                           if receipt.delivery_reason else ""), err=True)


@inbox.command("peek", epilog=INBOX_EXIT_HELP)
@_mailbox_option("--as", "Mailbox to look at", by_project=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@command
def peek(name: str | None, as_json: bool) -> None:
    """Show the mail waiting in a mailbox without consuming it."""
    known, result = inbox_service.peek(name, project=os.getcwd())
    mailbox, directory = result.name, known.path
    with inbox_service.mailbox_io(f"read mailbox {mailbox!r}", MailboxReadError):
        rejected = read_rejected(directory, mailbox)
    if as_json:
        emit_json({"ok": True, "mailbox": mailbox, "pending": len(result.mails),
                   "messages": [m.to_json() for m in result.mails],
                   "unreadable": [_rejected_json(b) for b in result.unreadable],
                   "in_flight": result.in_flight, "rejected": result.rejected_count,
                   "rejected_file": rejected_path(directory, mailbox),
                   "rejected_lines": rejected})
        return
    if not result.mails:
        echo(f'mailbox "{mailbox}": no mail waiting')
    else:
        echo(f'mailbox "{mailbox}": {len(result.mails)} waiting')
        _print_mails(result.mails)
    if result.in_flight:
        echo(f"{result.in_flight} line(s) are being delivered right now")
    if result.unreadable:
        echo(f"{len(result.unreadable)} unreadable line(s) will be set aside at the "
             "next delivery:")
        for bad in result.unreadable:
            echo(f"    line {bad.lineno}: {bad.reason}: {bad.preview}")
    if result.rejected_count:
        echo(f"{result.rejected_count} rejected line(s) kept in "
             f"{rejected_path(directory, mailbox)}")
        for record in rejected[-5:]:
            echo(f"    {record.get('at', '?')}: {record.get('reason', '?')}")


@inbox.command("list", epilog=INBOX_EXIT_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@command
def list_(as_json: bool) -> None:
    """Every mailbox: pending and rejected counts, who listens (cwd, session, last seen),
    and whether its session can be reached now (live: busy / idle) or only at its next
    stop (with the reason)."""
    directory, summaries = inbox_service.summaries()
    reach = {s.name: inbox_service.reach(directory, s.name) for s in summaries if s.listener}
    if as_json:
        emit_json({"ok": True, "inbox_dir": directory, "mailboxes": [
            {"name": s.name, "pending": s.pending, "rejected": s.rejected,
             "in_flight": s.in_flight, "listener": s.listener, "reach": reach.get(s.name)}
            for s in summaries]})
        return
    if not summaries:
        echo(f"no mailboxes yet in {directory}")
        return
    rows = [("MAILBOX", "PENDING", "REJECTED", "LAST SEEN", "SESSION", "REACH", "CWD")]
    notes = []
    for s in summaries:
        lst = Listener.from_json(s.listener or {}, s.name)
        r = reach.get(s.name)
        how = "-" if r is None else (f"live ({r['session']})" if r["live"] else "next stop")
        if r is not None and r["reason"]:
            notes.append(f"{s.name}: next stop — {r['reason']}")
        rows.append((s.name, str(s.pending), str(s.rejected),
                     lst.last_seen or "never listened", lst.session_id or "-", how,
                     lst.cwd or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    for row in rows:
        echo("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:6]))
             + "  " + row[6])
    for note in notes:
        echo(note)


@inbox.command("drain", epilog=INBOX_EXIT_HELP)
@_mailbox_option("--as", "Mailbox to empty")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@command
def drain(name: str | None, as_json: bool) -> None:
    """Take every waiting mail out of a mailbox and print it (each mail exactly once)."""
    mailbox = mailbox_name(name)
    directory = inbox_dir()

    def deliver(batch: store.Batch) -> None:
        if as_json:
            emit_json({"ok": True, "mailbox": mailbox,
                       "messages": [m.to_json() for m in batch.mails],
                       "rejected": [_rejected_json(b) for b in batch.rejected],
                       "rejected_file": rejected_path(directory, mailbox),
                       "duplicates_skipped": batch.duplicates,
                       "recovered_batches": batch.recovered_files})
        elif batch.mails or batch.rejected:
            echo(render_mail(mailbox, batch.mails, batch.rejected,
                             rejected_path(directory, mailbox)))
        else:
            echo(f'mailbox "{mailbox}": no mail')
        sys.stdout.flush()  # delivered means written out, before the batch is deleted

    batch = inbox_service.drain(mailbox, deliver, inbox=directory)
    if not batch.committed:  # nothing was there to take, so deliver() did not run
        deliver(batch)


@inbox.command("hook", context_settings={"ignore_unknown_options": True,
                                         "help_option_names": []})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@command
def hook(args: tuple[str, ...]) -> int:
    """The Claude Code Stop hook: `inbox hook --as NAME` (always exits 0).

    Reads the hook JSON on stdin, records the listener, and when mail is waiting
    prints {"decision":"block","reason":...} carrying all of it. See `--help`.
    """
    return run_hook_cli(list(args))


@inbox.command("watch")
@_mailbox_option("--as", "Mailbox to watch")
@click.option("--timeout", type=click.FloatRange(min=0), default=DEFAULT_TIMEOUT,
              show_default=True, help="Give up (exit 0) after this many seconds.")
@click.option("--interval", type=click.FloatRange(min=0.01), default=DEFAULT_INTERVAL,
              show_default=True, help="Seconds between looks at the mailbox.")
@command
def watch(name: str | None, timeout: float, interval: float) -> int:
    """Wait for mail; exit 2 with it on stderr (for an asyncRewake hook).

    \b
    Exit codes: 2 = mail was delivered on stderr (Claude starts a new turn with it);
    0 = timed out, replaced by a newer watcher for the same mailbox, the Claude
    process ($CLAUDE_PID) is gone, or Claude runs headless (`claude -p` cannot be
    woken, yet would wait for us). A bad option also exits 2 (click's usage error).
    Runtime problems are logged in <state dir>/logs/inbox-hook.log and exit 0.
    """
    mailbox = mailbox_name(name)
    try:
        payload = parse_payload(read_hook_input())
        return run_watch(mailbox, inbox=inbox_dir(), payload=payload, timeout=timeout,
                         interval=interval)
    except Exception as exc:  # an asyncRewake hook must never fail loudly: log it
        log(f"mailbox {mailbox!r}: watcher failed: {exc!r}", with_traceback=True)
        return 0
