"""What a Claude session is handling: the peer mail it was handed, until its answer is due.

    <state home>/conversations/handling/<session id>.json      (`Marker`, `Handed`)
        {version, mailbox, conversation,
         requests: [{request, thread, conversation, mail, transcript, offset}],
         carried: [{mail, transcript, offset}]}

Noted — under the file's lock — by whichever path put the mail in front of Claude: the
Stop hook's block, the watcher's wake, a live frame once the session's transcript shows
it. At each stop `due()` takes out the requests whose mail the transcript shows the
ending turn took in: Claude's final message (`last_assistant_message`) answers them.
A request whose mail has not reached Claude yet stays for a later stop: a watcher that
fired mid-turn, or a live frame queued behind the running turn, is read in the *next*
turn (measured on 2.1.332: such mail is a `queue-operation` record until Claude dequeues
it after the stop, then a `user` record; a Stop-hook block is a `user` record and an
`attachment`; mail during a tool call an `attachment`; docs/reverse-channel.md).

Meanwhile a `talk send` run from that session's Bash tool reads it (`read`) to stay in
the conversation — and hop budget — of the mail it is answering.

Standard library only, and one stat on the Stop hook's fast path.
"""

from __future__ import annotations

import json
import os

from ..claude.files import INTERRUPT_MARK, Record
from ..host.jsonfile import read_record, record_version
from ..host.locking import FileLock
from ..host.private import ensure_private_dir, state_home, write_private
from ..jsontypes import JsonRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..jsontypes import JsonObject, JsonValue

# Records that carry what Claude was shown; `queue-operation` only says it waits, and
# `api-request-*` / `assistant` / a `system` hook summary echo it back.
_SHOWN = ("user", "attachment")
LOCK_WAIT = 3.0  # s: a Claude stop never waits longer on it
_INTERRUPT_BYTES = INTERRUPT_MARK.encode()  # looked for before a line is parsed


def _dir() -> str:
    return os.path.join(state_home(), "conversations", "handling")


def path(session_id: str) -> str:
    safe = "".join(ch for ch in session_id if ch.isalnum() or ch in "-_")[:80] or "unknown"
    return os.path.join(_dir(), f"{safe}.json")


def _lock(session_id: str) -> FileLock:
    ensure_private_dir(_dir())
    return FileLock(path(session_id) + ".lock", timeout=LOCK_WAIT)


def transcript_end(path: object) -> int:
    """Where a transcript ends now: mail handed from here on shows up after this offset
    (0 when there is no transcript to look at)."""
    try:
        return os.stat(path).st_size if isinstance(path, str) and path else 0
    except (OSError, ValueError):  # (a path from the hook's input may hold a NUL)
        return 0


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


def read(session_id: str) -> JsonObject | None:
    """The marker as JSON, for callers that show or pass it on (None: none, or
    damaged)."""
    marker = current_marker(session_id)
    return None if marker is None else marker.to_json()


def _write(session_id: str, marker: Marker | None) -> None:
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
            # that handles it: kept until that turn's stop (see `due`)
            carried.append(Handed(ident, transcript, offset))
    if conversation is None and not requests:
        return []
    with _lock(session_id):
        current = current_marker(session_id) or Marker(None, None)
        known = {r.request for r in current.requests}
        fresh = [r for r in requests if r.request not in known]
        seen = {c.mail for c in current.carried}
        _write(session_id, Marker(mailbox, conversation or current.conversation,
                                  (*current.requests, *fresh),
                                  (*current.carried, *(c for c in carried
                                                       if c.mail not in seen))))
    return [str(r.request) for r in fresh]


class Settled:
    """What one stop settles: the requests this turn's final message answers, the ones
    whose turn the human interrupted (Esc: no Stop hook ran for it — the asking thread
    is told, and no later turn's words answer it), and their conversation. (A plain
    class: the Stop hook's path imports neither `typing` nor `enum`.)"""

    __slots__ = ("answered", "conversation", "interrupted")

    def __init__(self, answered: list[JsonObject], interrupted: list[JsonObject],
                 conversation: str | None) -> None:
        self.answered, self.interrupted = answered, interrupted
        self.conversation = conversation


def due(session_id: str, answer: str | None = None) -> tuple[list[JsonObject], str | None]:
    """`settle` without the interrupted ones (they are taken out all the same)."""
    settled = settle(session_id, answer)
    return settled.answered, settled.conversation


def settle(session_id: str, answer: str | None = None) -> Settled:
    """At a stop: take out the requests this turn's final message `answer` answers — those
    it names (the envelope asks Claude to echo the request token), and those whose mail
    the transcript shows Claude took in — and the conversation they are in. The rest
    stay. Without a transcript to look at, every request is due (the old rule: the next
    stop after handing answers).

    A request is answered only by the turn that took it in. A turn the human ended with
    Esc runs no Stop hook (measured on 2.1.332), so the next stop belongs to another
    turn — one the human started about something else ("never mind, what is 2+2?"). The
    transcript says so: after the record that took the mail in comes Claude Code's
    `[Request interrupted by user…]` record. Such a request is taken out as
    `interrupted`, never answered with this turn's words, even when they name it.

    The token is the evidence that does not wait on Claude Code's transcript, which can
    lag the Stop hook (the journeys caught a live mail's turn answered before its record
    was written: the answer was never sent). Waiting for the record instead would let a
    mail dequeued while this stop's hook runs be answered by the wrong turn."""
    if not os.path.exists(path(session_id)):
        return Settled([], [], None)
    with _lock(session_id):
        current = current_marker(session_id)
        if current is None:
            _write(session_id, None)
            return Settled([], [], None)
        held = current.requests
        turns = [(r, _turn(r)) for r in held]
        cut = [r for r, turn in turns if turn == Turn.INTERRUPTED]
        now = [r for r, turn in turns if turn != Turn.INTERRUPTED
               and (turn == Turn.TAKEN_IN or _named(r, answer))]
        later = [r for r in held if r not in now and r not in cut]
        # mail this turn took in is done with; mail not taken in yet (handed at this
        # very stop, e.g. by the watcher) keeps the conversation for its turn
        carried = [c for c in current.carried if _turn(c) == Turn.NOT_YET]
        _write(session_id, Marker(current.mailbox, current.conversation, (*later,),
                                  (*carried,)) if later or carried else None)
    return Settled([r.to_json() for r in now], [r.to_json() for r in cut],
                   current.conversation)


def interrupted(session_id: str, request: str) -> JsonObject | None:
    """The entry of `request`, taken out, when the session's transcript shows the human
    interrupted the turn that took its mail in (None otherwise: not taken in yet, still
    running, answered, or not this session's). What the courier, watching the session,
    calls every tick: the asking thread hears of an Esc at once, not at the next stop."""
    current = current_marker(session_id)
    if current is None or not any(r.request == request and _turn(r) == Turn.INTERRUPTED
                                  for r in current.requests):
        return None
    with _lock(session_id):
        current = current_marker(session_id)
        mine = [r for r in current.requests if r.request == request] if current else []
        if current is None or not mine:
            return None  # a stop took it out meanwhile
        rest = [r for r in current.requests if r.request != request]
        _write(session_id, Marker(current.mailbox, current.conversation, (*rest,),
                                  current.carried) if rest or current.carried else None)
    return mine[0].to_json()


def _named(request: Handed, answer: str | None) -> bool:
    token = request.request
    return bool(answer) and bool(token) and token is not None and token in str(answer)


class Turn:
    """Where the transcript says a request's mail is (constants: no `enum` on the Stop
    hook's path)."""

    NOT_YET = "not-yet"  # not in front of Claude yet (queued behind the running turn)
    TAKEN_IN = "taken-in"  # a turn took it in, and was not interrupted (so far)
    INTERRUPTED = "interrupted"  # the turn that took it in was ended by the human (Esc)


def _turn(handed: Handed) -> str:
    if handed.transcript is None or not handed.mail:
        return Turn.TAKEN_IN
    return turn_of(handed.transcript, handed.offset, handed.mail)


def taken_in(transcript: str, offset: int, marker: str) -> bool:
    """True when a record of `transcript` (from byte `offset`) showed Claude `marker` (see
    `turn_of`), whatever became of that turn."""
    return turn_of(transcript, offset, marker) != Turn.NOT_YET


def turn_of(transcript: str, offset: int, marker: str) -> str:
    """Whether a record of `transcript` (from byte `offset`) showed Claude `marker` — a
    mail id, which every rendering of the mail carries — as part of a turn: a `user`
    record (its own turn; a Stop-hook block) or an `attachment` (beside a tool result);
    and whether the human then interrupted that turn: a later `user` record that is
    Claude Code's `[Request interrupted by user]` (Esc mid-answer) or `[Request
    interrupted by user for tool use]` (Esc at a permission prompt, or while a tool ran).
    Measured on 2.1.332: neither runs a Stop hook.

    At a stop TAKEN_IN means the turn now ending took it in: Claude dequeues mail that
    waits (a `queue-operation`) only after the stop. The answer itself need not be in the
    file yet: the stop's `last_assistant_message` is it (measured: an interactive
    session's transcript can lag the Stop hook). An unreadable transcript counts as taken
    in (the old rule), so a request is never held forever by a file."""
    needle = marker.encode("utf-8")
    seen = False
    try:
        with open(transcript, "rb") as fh:
            fh.seek(max(0, offset))
            for line in fh:
                if not seen:
                    record = Record.parse_line(line) if needle in line else None
                    seen = record is not None and record.kind in _SHOWN
                elif _INTERRUPT_BYTES in line and (record := Record.parse_line(line)) is not None \
                        and record.interrupt:
                    return Turn.INTERRUPTED
    except (OSError, ValueError):  # (ValueError: a NUL in a path from a hook's input)
        return Turn.TAKEN_IN
    return Turn.TAKEN_IN if seen else Turn.NOT_YET
