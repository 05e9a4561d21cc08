"""Codex → Claude, as one service: what `codexbridge inbox …` and the MCP role `codex`
both call. Names are validated here, the push rule is decided here, and file errors
become MailboxReadError / MailboxWriteError here — never at the front ends.

The push rule (one, for every caller): a mistyped name is the classic way to lose mail
silently, so mail to a name nobody knows (no listener, no mail, no files) is refused
with NoMailboxError — naming the mailboxes that do have listeners and the closest match
— while other mailboxes have listeners. `new=True` creates it anyway. On a fresh set-up
with no listener anywhere the mail is stored, with a warning saying how to hook a session.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import NamedTuple

from ..errors import (
    AmbiguousSessionError,
    MailboxError,
    MailboxNameError,
    MailboxReadError,
    MailboxWriteError,
    NoMailboxError,
    StateError,
    UsageError,
)
from ..host.clock import iso_utc
from ..host.limits import mail_max, mail_over_limit, max_hops
from ..host.mailboxes import (
    MAILBOX_ENV,
    default_mailbox,
    inbox_dir,
    mailbox_name,
    name_problem,
    validate_name,
)
from ..host.private import ensure_private_dir
from ..host.procs import pid_alive
from ..inbox import peek as reading
from ..inbox import store
from ..inbox.lines import Mail, new_mail
from ..inbox.location import mail_path
from . import envelope, live
from .conversations import Conversations, current_conversation
from .frame import label_problem
from .listeners import Listener, closest_name, read_listeners
from .records import DeliveryStore, ToClaude
from .records import preview as text_preview
from .routing import sending_from_thread

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..jsontypes import JsonObject
    from .envelope import Sender
    from .live import Reach

DEFAULT_SENDER = "codex"
FROM_ENV = "CODEX_BRIDGE_FROM"


@contextmanager
def mailbox_io(action: str, error: type[MailboxError] = MailboxWriteError) -> Iterator[None]:
    """Turn an OSError into `error` naming what could not be done, and where. A state
    home that cannot be written (read-only, full: StateWriteError) or is refused as
    unsafe stays what it is — exit 73, its message naming the path and the fix."""
    try:
        yield
    except StateError:
        raise
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise error(f"cannot {action}: {exc.strerror or exc}{where}",
                    details={"errno": exc.errno}) from exc


def sender_name(raw: str | None, env: Mapping[str, str] | None = None,
                default: str = DEFAULT_SENDER) -> str:
    """`raw`, else $CODEX_BRIDGE_FROM, else `default` (`codex`; `claude-code` when Claude
    Code sends: `request`) — validated (it is shown to Claude as a peer AI agent's name,
    so it may not claim to be the human: `frame.label_problem`)."""

    source = os.environ if env is None else env
    name = raw or source.get(FROM_ENV) or default
    problem = name_problem(name) or label_problem(name)
    if problem:
        raise MailboxNameError(f"invalid sender name {name!r} (from / --from / "
                               f"${FROM_ENV}): {problem}", details={"from": name})
    return name


class Directory(NamedTuple):
    """What an inbox directory holds: who listens, and every name with files."""

    path: str
    listeners: dict[str, JsonObject]  # (as on disk: doctor shows them whole)
    names: list[str]

    def knows(self, name: str) -> bool:
        return name in self.listeners or name in self.names

    def unknown(self, name: str) -> NoMailboxError:
        listening = sorted(self.listeners)
        guess = closest_name(name, listening or self.names)
        hint = f'; did you mean "{guess}"?' if guess else "."
        return NoMailboxError(
            f'no Claude session listens on mailbox "{name}" (listening: '
            f"{self.listening_summary()}){hint} Address one of those (--to NAME, MCP: "
            "mailbox): mail stored under a name nobody reads waits there unread",
            details={"mailbox": name, "mailboxes": self.names, "listening": listening,
                     "didYouMean": guess})

    def listening_summary(self) -> str:
        """`name (cwd)` of every listener, for messages that must say where mail can go."""
        return ", ".join(f"{n} ({self.listener(n).cwd or 'unknown project'})"
                         for n in sorted(self.listeners)) or "none"

    def listener(self, name: str) -> Listener:
        """NAME's listener record, typed (NAME must be one of `listeners`)."""
        return Listener.from_json(self.listeners[name], name)

    def in_project(self, project: str) -> list[str]:
        """The mailboxes whose Claude session works in `project` (its own directory
        first; else a session in a directory above it)."""
        real = os.path.realpath(project)

        def cwd_of(name: str) -> str | None:
            cwd = self.listener(name).cwd
            return os.path.realpath(cwd) if cwd else None

        exact = [n for n in sorted(self.listeners) if cwd_of(n) == real]
        if exact:
            return exact
        above = [(len(c), n) for n in sorted(self.listeners)
                 if (c := cwd_of(n)) and real.startswith(c.rstrip(os.sep) + os.sep)]
        longest = max((length for length, _ in above), default=0)
        return [n for length, n in above if length == longest]


def scan(inbox: str | None = None) -> Directory:
    directory = inbox or inbox_dir()
    with mailbox_io("read the mailboxes", MailboxReadError):
        listeners = read_listeners(directory)
        names = sorted(set(reading.mailbox_names(directory)) | set(listeners))
    return Directory(directory, listeners, names)


class PushReceipt(NamedTuple):
    mail: Mail
    mailbox_file: str
    listener: JsonObject | None
    warning: str | None
    delivery: str = "next-stop"  # "live": already in the running Claude session
    delivery_reason: str | None = None  # why not live (or how it is on its way)

    @property
    def live(self) -> bool:
        """Already in the running Claude session: `live.Route.LIVE` (a str enum; `live` is
        imported only when a listener is there, so the value is compared as its string)."""
        return self.delivery == "live"

    @property
    def in_flight(self) -> bool:
        """In the running session, or being carried into it right now by whoever took it
        first — the session's watcher (asyncRewake), its Stop hook or another push
        (`live.Route.TAKEN`): either way no stop of the session has to come first."""
        return self.live or self.delivery == "taken"


def push(text: str, *, to: str | None = None, sender: str | None = None,
         inbox: str | None = None, new: bool = False,
         fields: JsonObject | None = None, interrupt: bool = False,
         project: str | None = None) -> PushReceipt:
    """Store one mail for mailbox `to`, under the push rule above; `fields` travel on
    the mail line (conversation, request, in_reply_to …). Then, when the listening
    session is running, deliver it live (`live.py`); else it waits for the Stop hook."""

    name, who, known = _addressed(text, to, sender, inbox, new, project,
                                  sending_from_thread(os.environ))
    return _store(known, name, who, text, fields, interrupt)


def _addressed(text: str, to: str | None, sender: str | None, inbox: str | None,
               new: bool, project: str | None = None,
               thread: str | None = None, default_sender: str = DEFAULT_SENDER
               ) -> tuple[str, str, Directory]:
    """Validate everything about a push before anything is written or spent."""
    who = sender_name(sender, default=default_sender)
    if not text.strip():
        raise UsageError("refusing to send an empty message")

    why = mail_over_limit(text, mail_max(os.environ))
    if why:
        raise UsageError(why)
    known = scan(inbox)
    name = resolve_mailbox(to, known, project, thread=thread)
    if known.listeners and not known.knows(name) and not new:
        raise known.unknown(name)
    return name, who, known


def resolve_mailbox(to: str | None, known: Directory, project: str | None,
                    env: Mapping[str, str] | None = None, thread: str | None = None) -> str:
    """Which mailbox mail without a name goes to — never a guess between two.

    `to`, else $CODEX_BRIDGE_MAILBOX, else — from inside a project (the cwd codex gives
    a command or the role-codex MCP server is the thread's own, measured) — the one
    Claude session listening there: the plugin names each project's sessions their own
    mailbox, so Codex needs no name at all. Several sessions there: the live one when
    only one of them runs; else the one already in a conversation with the asking
    Codex `thread` (the one that talked with it last: its request was answered there, or
    it asked that thread); else refused, each candidate named with what to choose by and
    the exact retry (AmbiguousSessionError, retryable). None there: `default`."""
    if to:
        return validate_name(to)
    source = os.environ if env is None else env
    if source.get(MAILBOX_ENV):
        return validate_name(source[MAILBOX_ENV])
    if project:
        mine = known.in_project(project)
        if len(mine) > 1:
            running = [n for n in mine if _running(known.listener(n))]
            mine = running if len(running) == 1 else mine
        if len(mine) > 1 and thread:
            talked = last_talked(thread, mine)
            if talked:
                return max(talked, key=lambda n: talked[n])
        if len(mine) == 1:
            return mine[0]
        if mine:
            raise ambiguous(project, mine, known, thread)
    return validate_name(default_mailbox(dict(source)))


def last_talked(thread: str, mailboxes: list[str]) -> dict[str, float]:
    """When each of `mailboxes` last talked with Codex thread `thread`, from the delivery
    records: a request of the thread's handed to it, or a message of its session's sent
    into the thread (its reply-to mailbox). Only the mailboxes that did."""

    out: dict[str, float] = {}
    for rec in DeliveryStore().recent(500):
        if rec.thread_id != thread:
            continue
        box = rec.mailbox if isinstance(rec, ToClaude) else rec.reply_to
        if box in mailboxes:
            out[box] = max(out.get(box, 0.0), rec.updated_at or rec.created_at)
    return out


def ambiguous(project: str, mine: list[str], known: Directory,
              thread: str | None) -> AmbiguousSessionError:
    """Several Claude sessions in `project`, none already talking with `thread`: each
    candidate with what to choose by — whether it runs and is busy, when it was last
    active, when it last talked with this thread — and the exact retry."""

    talked = last_talked(thread, mine) if thread else {}
    candidates: list[dict[str, object]] = []
    lines = []
    for n in sorted(mine, key=lambda m: known.listener(m).last_seen or "", reverse=True):
        listener = known.listener(n)
        running = _running(listener)
        status = (live.status(known.path, n).get("session") or "running") if running \
            else "not running"
        with_thread = iso_utc(talked[n]) if n in talked else None
        candidates.append({
            "mailbox": n, "session_id": listener.session_id,
            "cwd": listener.cwd, "running": running, "status": status,
            "last_seen": listener.last_seen, "talked_with_this_thread": with_thread,
            "retry": {"mailbox": n}, "retry_command": f"codexbridge inbox push --to {n} …"})
        lines.append(f"  {n}: session {listener.session_id}, {status}, last active "
                     f"{listener.last_seen or 'unknown'}, "
                     + (f"last talked with this thread {with_thread}" if with_thread
                        else "never talked with this thread"))
    return AmbiguousSessionError(
        f"{len(mine)} Claude Code sessions listen in {project} ({', '.join(mine)}) and "
        "none of them has talked "
        "with this Codex thread yet, so codexbridge will not guess which one you mean "
        "(nothing was sent):\n" + "\n".join(lines) + "\nSend it again naming one: MCP "
        "claude_message_send with mailbox set to its name (e.g. "
        f'"mailbox": "{candidates[0]["mailbox"]}"), or `codexbridge inbox push --to NAME`. '
        "Ask the human which session they mean if nothing above tells you; a busy one "
        "answers after its running turn.", candidates)


def _running(listener: Listener) -> bool:

    return listener.claude_pid is not None and pid_alive(listener.claude_pid)


def _store(known: Directory, name: str, who: str, text: str,
           fields: JsonObject | None, interrupt: bool = False) -> PushReceipt:
    mail = new_mail(text, to=name, sender=who, extra=fields)
    with mailbox_io(f"write to mailbox {name!r}"):
        ensure_private_dir(known.path)
        store.push(known.path, mail)
    warning = None
    if name not in known.listeners:
        warning = (f'no Claude Code session has listened on mailbox "{name}" yet; the mail '
                   f'is kept until a session on "{name}" starts or stops (`codexbridge '
                   f'setup claude` installs the plugin, or `codexbridge install-hook --as '
                   f'{name} --project DIR` just the hooks).')
        return PushReceipt(mail, mail_path(known.path, name), None, warning)
    delivery, why = _live(known.path, name, interrupt)
    return PushReceipt(mail, mail_path(known.path, name), known.listeners.get(name), warning,
                       delivery, why)


def _live(inbox: str, name: str, interrupt: bool) -> tuple[str, str | None]:
    """Deliver the mailbox into its running session now; the mail is safe either way
    (it is stored first), so a failure here only means "at the next stop"."""

    try:
        outcome = live.deliver_now(inbox, name, interrupt=interrupt)
    except Exception as exc:  # the mail is stored: never fail the push over this
        return live.Route.NEXT_STOP, f"live delivery failed ({exc!r})"
    if outcome.delivery is live.Route.NONE:  # someone else (the hook, the watcher) took it first
        return live.Route.TAKEN, ("the Stop hook, the watcher or another push took it first: it is "
                         "being delivered")
    return outcome.delivery, outcome.reason


class RequestReceipt(NamedTuple):
    push: PushReceipt
    request: str
    conversation: str
    hop: int
    max_hops: int
    expect_reply_from: str | None  # the Codex thread that waits for Claude's answer


def request(text: str, *, to: str | None = None, sender: str | None = None,
            inbox: str | None = None, new: bool = False, expect_reply: bool = False,
            thread: str | None = None, conversation: str | None = None,
            env: Mapping[str, str] | None = None, interrupt: bool = False,
            project: str | None = None, new_conversation: bool = False,
            sent_by: Sender | None = None) -> RequestReceipt:
    """Codex → Claude: a message that is a request in a conversation — it spends a hop
    (refused over budget, before anything is written) and carries the envelope fields.
    With `expect_reply`, the Claude session's answer (its final message after handling
    the mail) is sent back into the asking thread — `thread`, else `$CODEX_THREAD_ID`
    (set by codex for the commands it runs) — and a delivery record tracks it.
    `sent_by`: who sends (default `envelope.who_sends(env)`), kept on the mail and the
    record."""

    source = os.environ if env is None else env
    by = sent_by or envelope.who_sends(source)
    # Mail a Claude Code session sends (another session's mailbox) is not named codex
    default = "claude-code" if by.speaker is envelope.Speaker.CLAUDE_CODE else DEFAULT_SENDER
    asking = thread or sending_from_thread(source)
    name, who, known = _addressed(text, to, sender, inbox, new, project, asking, default)
    if expect_reply and not asking:
        raise UsageError("expect a reply from where? Pass the asking Codex thread (--thread ID) "
                         "— inside a Codex turn it is $CODEX_THREAD_ID")
    token = envelope.request_token()
    conv, hop, limit = Conversations().spend_hop(
        current_conversation(conversation, source, new=new_conversation), {
            "direction": f"{_arrow(by)}→claude", "delivery": token, "mailbox": name,
            "thread": asking}, max_hops(dict(source)), words=text)
    fields: JsonObject = {"request": token, "conversation": conv, "hop": hop,
                          "max_hops": limit, "sent_by": by.speaker.value}
    store = DeliveryStore()
    if expect_reply and asking:  # (no asking thread was refused above)
        fields["expect_reply"] = {"thread": asking}
        # Recorded before the mail leaves: a live push is taken in (and noted as handled
        # on this record) within a fraction of a second.
        record = ToClaude(id=token, conversation=conv, hop=hop, max_hops=limit,
                          thread_id=asking, mailbox=name, text_preview=text_preview(text),
                          sender=by.speaker.value, sender_thread=by.thread)
        record.queue()
        store.save(record)
    try:
        receipt = _store(known, name, who, text, fields, interrupt)
    except BaseException as exc:
        if expect_reply:
            why = f"the mail was not stored ({exc!r})"
            store.update(token, lambda r: r.fail(why))
        raise
    return RequestReceipt(receipt, token, conv, hop, limit, asking if expect_reply else None)


def _arrow(by: Sender) -> str:
    """The hop trail's name for the sender (`codex→claude` is Codex's request)."""
    return {"claude-code": "claude", "human": "human"}.get(by.speaker.value, "codex")


def peek(name: str | None, *, inbox: str | None = None, project: str | None = None
         ) -> tuple[Directory, reading.Peek]:
    """What mailbox `name` holds, without consuming it (NoMailboxError as for push; no
    name: the one a push from `project` would use)."""
    known = scan(inbox)
    mailbox = resolve_mailbox(name, known, project)
    if known.listeners and not known.knows(mailbox):
        raise known.unknown(mailbox)
    with mailbox_io(f"read mailbox {mailbox!r}", MailboxReadError):
        return known, reading.peek(known.path, mailbox)


def reach(inbox: str, name: str) -> Reach:
    """How mail for `name` would reach its session right now: `live` (with the
    session's busy / idle status) or at its next stop, and why (`live.status`)."""

    try:
        return live.status(inbox, name)
    except OSError as exc:
        return {"live": False, "session": None, "reason": f"cannot tell ({exc})",
                "drift": False}


def summaries(inbox: str | None = None) -> tuple[str, list[reading.MailboxSummary]]:
    """Every mailbox with its pending / rejected / in-flight counts and listener."""
    known = scan(inbox)
    with mailbox_io("list mailboxes", MailboxReadError):
        return known.path, reading.summarize(known.path, known.listeners)


def drain(name: str | None, deliver: Callable[[store.Batch], None], *,
          inbox: str | None = None) -> store.Batch:
    """Take every waiting mail of `name` once: `deliver(batch)`, then commit."""
    mailbox = mailbox_name(name)
    directory = inbox or inbox_dir()
    with mailbox_io(f"drain mailbox {mailbox!r}"):
        ensure_private_dir(directory)
        return store.drain(directory, mailbox, deliver)
