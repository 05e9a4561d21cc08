"""Claude's answers going back to the Codex threads that asked.

When a Claude session is handed mail that expects a reply (`inbox push --expect-reply`,
MCP `claude_message_send` with `expectReply`), whichever path handed it — the Stop
hook's block, the watcher's wake, a live frame — notes it (`note_handed`), and the
courier starts watching the session (it tells the asking thread if the session ends
without answering). At each stop, `answer_pending` sends the turn's final message — the
Stop input's `last_assistant_message` — to every request this turn took in
(`settle` decides which, from the handling marker and the transcript) as a reply delivery the
courier carries into the asking thread: a reply spends no hop and is not answered in
turn. Each request is answered once: the first stop to claim it on its record wins.
The Stop hook must stay quick: it writes a record and hands it over.
"""

from __future__ import annotations

import os
import time

from ..claude.files import Turn, answer_usage, turn_of
from ..codex.endpoint import Reach
from ..jsontypes import opt_str
from . import courier_link, handling
from .records import DeliveryStore, ToClaude, Tokens, new_reply, preview

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..jsontypes import JsonObject


def answer_pending(session_id: str | None, answer: str | None) -> int:
    """At a stop: send `answer` to every request this turn took in; returns how many
    replies were handed to the courier."""
    if not session_id:
        return 0
    # The session's own mailbox (before settle() may remove the file): told if an answer
    # cannot reach its thread.
    marker = handling.current_marker(session_id)
    mailbox = marker.mailbox if marker is not None else None
    settled = settle(session_id, answer)
    requests = [r for r in settled.answered if r.get("thread") and r.get("request")]
    cut = [r for r in settled.interrupted if r.get("thread") and r.get("request")]
    if not requests and not cut:
        return 0

    store = DeliveryStore()
    started = [n for n in (tell_interrupted(store, session_id, r) for r in cut) if n]
    reach = Reach.from_env(os.environ)  # the asking thread's app-server, as this env names it
    for req in requests:
        request = str(req["request"])
        claimed: list[ToClaude] = []

        def claim(r: ToClaude, text: str | None = answer, out: list[ToClaude] = claimed,
                  transcript: str | None = opt_str(req["transcript"]) if "transcript" in req
                  else None) -> None:
            if r.state.final or r.answered_at is not None:
                return  # answered already (by an earlier stop, or another path)
            r.answered_at, r.transcript = time.time(), transcript
            if text:
                r.reply_preview, r.reply_bytes = preview(text), len(text.encode("utf-8"))
            else:
                r.fail("the Claude Code session ended its turn without a final "
                       "message: no answer to send back")
            out.append(r)

        store.update(request, claim, ToClaude)
        if not claimed:
            continue
        if answer:
            reply = new_reply(store, str(req["thread"]), request,
                              opt_str(req.get("conversation")), answer, reach=reach,
                              reply_to=mailbox)
        else:  # nothing to send back: the asking thread is told so, not left waiting
            reply = new_reply(store, str(req["thread"]), request,
                              opt_str(req.get("conversation")),
                              f"codexbridge: your request {request} to Claude Code got no "
                              "answer — the Claude Code session ended its turn without a "
                              "final message. Ask again if you still need it.",
                              reach=reach, reply_to=None, notice=True)
        started.append(reply.id)
    if started:
        courier_link.ensure(started)
    return len(started)



def claude_tokens(store: DeliveryStore, request: str) -> Tokens | None:
    """What the Claude turn that answered `request` cost, from its session's transcript
    — read once the answer reached the asking thread, when Claude Code has long written
    it (its transcript can lag the Stop hook); None when it does not show."""
    record = store.get(request, ToClaude)
    if record is None or not record.transcript:
        return None
    return Tokens.of_claude(answer_usage(record.transcript, record.id) or ())


INTERRUPTED = "the human interrupted"  # what the asking thread's notice opens with


def interrupted_notice(request: str, session_id: str | None) -> str:
    """What the asking Codex thread is told when the human ended, with Esc, the Claude
    turn that had its request: what happened, and the two ways on that work."""
    where = f" (session {session_id})" if session_id else ""
    return (f"codexbridge: {INTERRUPTED} Claude Code's turn that had your request {request}"
            f"{where} — they pressed Esc in Claude's TUI before Claude finished (at a "
            "permission prompt, while a tool ran, or while it answered). That turn ended "
            "without an answer, "
            "and nothing Claude says later is sent back as one. Nothing more will come "
            "back for it unless you ask again (claude_message_send with expectReply), or "
            f"Claude answers it itself with `codexbridge talk send --in-reply-to {request} "
            "…`. The human is at Claude's TUI: they may have meant to stop this request.")


def tell_interrupted(store: DeliveryStore, session_id: str, entry: JsonObject) -> str | None:
    """The turn that took request `entry` in was interrupted by the human: the request
    ends `failed` with that reason, and the asking thread gets a notice turn — once,
    whoever sees it first (the courier watching the session, or the next stop). Returns
    the notice's delivery id (None when the request was settled already)."""

    request, thread = str(entry.get("request") or ""), str(entry.get("thread") or "")
    if not request or not thread:
        return None
    claimed: list[ToClaude] = []

    def cut(r: ToClaude) -> None:
        if r.state.final or r.answered_at is not None:
            return  # answered already, or told
        r.answered_at = time.time()
        r.fail(f"{INTERRUPTED} the Claude Code turn that had "
               "it (Esc in Claude's TUI): no answer")
        claimed.append(r)

    store.update(request, cut, ToClaude)
    if not claimed:
        return None
    notice = new_reply(store, thread, request, opt_str(entry.get("conversation")),
                       interrupted_notice(request, session_id), reach=Reach(),
                       reply_to=None, notice=True)
    return notice.id


def watch_interrupt(record: ToClaude) -> str | None:
    """For the courier, every tick while it watches a request a session took in: when
    the session's transcript shows the human interrupted the turn that had it, tell the
    asking thread now (the notice's delivery id, for the courier to carry)."""
    if not record.session_id or record.answered_at is not None:
        return None
    entry = interrupted(record.session_id, record.id)
    if entry is None:
        return None

    return tell_interrupted(DeliveryStore(), record.session_id, entry)


# --- which requests a stop answers ------------------------------------------------------------

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
    if not os.path.exists(handling.path(session_id)):
        return Settled([], [], None)
    with handling.lock(session_id):
        current = handling.current_marker(session_id)
        if current is None:
            handling.write(session_id, None)
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
        handling.write(session_id, handling.Marker(current.mailbox, current.conversation, (*later,),
                                  (*carried,)) if later or carried else None)
    return Settled([r.to_json() for r in now], [r.to_json() for r in cut],
                   current.conversation)


def interrupted(session_id: str, request: str) -> JsonObject | None:
    """The entry of `request`, taken out, when the session's transcript shows the human
    interrupted the turn that took its mail in (None otherwise: not taken in yet, still
    running, answered, or not this session's). What the courier, watching the session,
    calls every tick: the asking thread hears of an Esc at once, not at the next stop."""
    current = handling.current_marker(session_id)
    if current is None or not any(r.request == request and _turn(r) == Turn.INTERRUPTED
                                  for r in current.requests):
        return None
    with handling.lock(session_id):
        current = handling.current_marker(session_id)
        mine = [r for r in current.requests if r.request == request] if current else []
        if current is None or not mine:
            return None  # a stop took it out meanwhile
        rest = [r for r in current.requests if r.request != request]
        handling.write(session_id, handling.Marker(current.mailbox, current.conversation, (*rest,),
                                  current.carried) if rest or current.carried else None)
    return mine[0].to_json()


def _named(request: handling.Handed, answer: str | None) -> bool:
    token = request.request
    return bool(answer and token and token in answer)


def _turn(handed: handling.Handed) -> str:
    if handed.transcript is None or not handed.mail:
        return Turn.TAKEN_IN
    return turn_of(handed.transcript, handed.offset, handed.mail)
