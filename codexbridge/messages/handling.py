"""What a Claude session is handling: the peer mail it was handed, until its answer is due.

    <state home>/conversations/handling/<session id>.json      (`Marker`, `Handed`)
        {version, mailbox, conversation,
         requests: [{request, thread, conversation, mail, transcript, offset}],
         carried: [{mail, transcript, offset}]}

Noted — under the file's lock — by whichever path put the mail in front of Claude: the
Stop hook's block, the watcher's wake, a live frame once the session's transcript shows
it. At each stop `answers.settle` takes out the requests whose mail the transcript shows
the ending turn took in (`claude/files.turn_of`): Claude's final message
(`last_assistant_message`) answers them.
A request whose mail has not reached Claude yet stays for a later stop: a watcher that
fired mid-turn, or a live frame queued behind the running turn, is read in the *next*
turn (measured on 2.1.332: such mail is a `queue-operation` record until Claude dequeues
it after the stop, then a `user` record; a Stop-hook block is a `user` record and an
`attachment`; mail during a tool call an `attachment`; docs/reverse-channel.md).

Meanwhile a `talk send` run from that session's Bash tool reads it (`read`) to stay in
the conversation — and hop budget — of the mail it is answering.

Standard library only, and one stat on the Stop hook's fast path. It reads no transcript
(the stop's decisions are `answers.py`'s): a `talk send` that only wants the marker loads
nothing of Claude Code's.
"""

from __future__ import annotations

import json
import os

from ..host.jsonfile import read_record, record_version
from ..host.locking import FileLock
from ..host.private import ensure_private_dir, state_home, write_private
from ..jsontypes import JsonRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..jsontypes import JsonObject, JsonValue

LOCK_WAIT = 3.0  # s: a Claude stop never waits longer on it


def _dir() -> str:
    return os.path.join(state_home(), "conversations", "handling")


def path(session_id: str) -> str:
    safe = "".join(ch for ch in session_id if ch.isalnum() or ch in "-_")[:80] or "unknown"
    return os.path.join(_dir(), f"{safe}.json")


def lock(session_id: str) -> FileLock:
    ensure_private_dir(_dir())
    return FileLock(path(session_id) + ".lock", timeout=LOCK_WAIT)


MARKER_VERSION = 1  # the marker's format (files without one are version 1)


class Handed(JsonRecord):
    """One mail the session was handed, as its marker keeps it: a request (`thread`
    waits for the answer to `request`, in `conversation`), or mail that expects no
    answer, carried only for its conversation (`thread` None) — and where the transcript
    shows it: after byte `offset` of `transcript`. A field of the wrong type reads as
    absent."""

    mail: str | None
    transcript: str | None
    offset: int = 0
    request: str | None = None
    thread: str | None = None
    conversation: str | None = None

    def to_json(self) -> JsonObject:
        where: JsonObject = {"mail": self.mail, "transcript": self.transcript,
                             "offset": self.offset}
        if self.thread is None:
            return where
        return {"request": self.request, "thread": self.thread,
                "conversation": self.conversation, **where}


class Marker(JsonRecord):
    """What a session is handling: the mailbox it listens as, the conversation its mail
    is in, the requests it owes an answer and the mail it carries for a later turn."""

    mailbox: str | None
    conversation: str | None
    requests: tuple[Handed, ...] = ()
    carried: tuple[Handed, ...] = ()

    def to_json(self) -> JsonObject:
        return {"version": MARKER_VERSION, "mailbox": self.mailbox,
                "conversation": self.conversation,
                "requests": [r.to_json() for r in self.requests],
                "carried": [c.to_json() for c in self.carried]}


class ExpectReply(JsonRecord):
    """A request's `expect_reply`: the Codex thread that waits for the answer."""

    thread: str | None = None


class Count(JsonRecord):
    """Tokens as a mail's `tokens` field holds them (records.Tokens, written)."""

    input: int = 0
    cached: int = 0
    output: int = 0


class Spent(Count, wire={"conversation_total": "conversationTotal"}):
    """A reply mail's `tokens`: what Codex's turn cost, and its conversation's total
    (records.Cost, written)."""

    conversation: str | None = None
    conversation_total: Count | None = None


class MailFields(JsonRecord, wire={"mail_id": "id"}):
    """The conversation fields of a mail's line (messages/envelope.py writes them):
    what the marker notes of it, and what `messages/render.py` shows Claude."""

    mail_id: str | None = None
    conversation: str | None = None
    request: str | None = None
    in_reply_to: JsonValue = None  # any value: a reply when it is one (truthy)
    hop: JsonValue = None  # shown as found
    max_hops: JsonValue = None
    expect_reply: ExpectReply | None = None
    tokens: Spent | None = None  # a reply's: what Codex's turn cost

    @property
    def waiting_thread(self) -> str | None:
        """The thread that waits for the answer (None: the mail expects none)."""
        return self.expect_reply.thread if self.expect_reply is not None else None


def load(session_id: str) -> Marker | None:
    """The session's marker (None: it is handling nothing). A damaged file raises
    DamagedStateError naming it."""
    where = path(session_id)
    data = read_record(where, "handling marker")
    if data is None:
        return None
    record_version(data, where, "handling marker")
    return Marker.read(data)


def current_marker(session_id: str) -> Marker | None:
    """`load`, with a damaged marker taken as none (the next `settle` removes it): it
    can only hold requests nobody can answer from it."""
    try:
        return load(session_id)
    except OSError:  # (DamagedStateError is a StateError, an OSError)
        return None


def write(session_id: str, marker: Marker | None) -> None:
    if marker is None:
        try:  # noqa: SIM105 - no contextlib on the hook's path
            os.unlink(path(session_id))
        except FileNotFoundError:
            pass
        return
    write_private(path(session_id),
                  json.dumps(marker.to_json(), ensure_ascii=False).encode("utf-8"))


def note(session_id: str, mailbox: str, mails: list[JsonObject],
         transcript: str | None = None, offset: int = 0) -> list[str]:
    """The session was just handed `mails` (each mail's JSON object), which show up in
    `transcript` after byte `offset`. Returns the requests newly noted (a mail noted
    twice — by the pusher and by the hook settling the same live frame — counts once)."""
    requests: list[Handed] = []
    carried: list[Handed] = []
    conversation = None
    for fields in map(MailFields.read, mails):
        conv, ident = fields.conversation, fields.mail_id
        if conv is not None:
            conversation = conv
        if (thread := fields.waiting_thread) is not None:
            requests.append(Handed(ident, transcript, offset, thread=thread,
                                   request=fields.request or ident, conversation=conv))
        elif conv is not None and ident is not None:
            # mail that expects no answer still carries its conversation into the turn
            # that handles it: kept until that turn's stop (see `answers.settle`)
            carried.append(Handed(ident, transcript, offset))
    if conversation is None and not requests:
        return []
    with lock(session_id):
        current = current_marker(session_id) or Marker(None, None)
        known = {r.request for r in current.requests}
        fresh = [r for r in requests if r.request not in known]
        seen = {c.mail for c in current.carried}
        write(session_id, Marker(mailbox, conversation or current.conversation,
                                  (*current.requests, *fresh),
                                  (*current.carried, *(c for c in carried
                                                       if c.mail not in seen))))
    return [str(r.request) for r in fresh]
