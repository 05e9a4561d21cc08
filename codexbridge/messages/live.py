"""Live delivery: mail pushed into the running Claude session's cross-session inbox.

Claude Code 2.1.332 runs a cross-session inbox on a unix socket in every session (the
mechanism behind its own SendMessage tool; measured in docs/protocol-notes.md, "Claude
Code's cross-session inbox"). Writing one frame there starts a turn within ~0.1 s when
the session is idle, lands right after the turn (or inside it, at the next tool result)
when it is busy. It is an internal protocol, so it is a fast path over the mailbox,
never the only path: anything here that is not exactly as measured means "the Stop hook
delivers it", with the reason said.

    deliver_now(inbox, name)   after a push: take the mailbox's pending mail, send it as
                               one frame, confirm it; else put it back for the Stop hook
    reconcile(inbox, name)     settle what earlier pushes left in flight (the hook and
                               every push call it first)
    status(inbox, name)        reachable now (busy / idle) or only at the next stop, and why

The decisions are pure functions of data read elsewhere (first section below):
`target` (may this mailbox's session be reached now, and where), `transcript_state` (has
the session received or queued our frame, by its msg_id), `wake_state` (the same for a
watcher's wake). The socket's bytes — the frame, the receipts, the settings that refuse
it — are the Claude Code adapter's (`claude/inbox_socket.py`).

Exactly once, never lost. The mailbox stays the durable record:

1. The batch is taken (the Stop hook's take-by-rename) and written, with the frame's
   `msg_id`, into `NAME.live-<msg_id>.json` (state `delivering`) before the frame is
   sent; only then are the taken files removed. A pusher killed at any point leaves
   either the taken files (the next take recovers them) or the live record (the next
   reconcile settles it).
2. Confirmation comes from the session's transcript (measured: the one reliable
   signal — Claude's receipts only ever report bad news): a `user` record or an in-turn
   attachment with our `msg_id` → delivered, the ids are remembered so no later take
   repeats them; an `enqueue` of our text → `queued` in the session's own queue, it
   arrives when the running turn ends, settled by a later reconcile.
3. A bad receipt (held, refused, dropped …), the session gone, or no sign of the frame
   in the transcript for 30 s → the mail goes back into the mailbox for the Stop hook
   (state `failed`). The record stays a while: should the frame surface in the
   transcript after all, its ids are remembered and the hook skips them. Mere slowness
   is not a failure: a push waits `CODEX_BRIDGE_LIVE_CONFIRM` seconds for a sign and
   then reports the frame as handed to the session, still in flight; later stops and
   pushes settle it.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import NamedTuple, TypedDict

from ..claude import inbox_socket
from ..claude.files import SessionEntry, records_with, transcript_end
from ..codex.protocol.enums import WireEnum
from ..errors import DamagedStateError
from ..host.jsonfile import read_keyed, read_object
from ..host.locking import lock
from ..host.private import open_state, write_private
from ..host.procs import pid_alive
from ..inbox import store
from ..inbox.lines import Mail, parse_line
from ..inbox.location import held, live_files, live_path, rejected_path
from ..jsontypes import objs, opt_float, opt_int, opt_str
from .handed import note_handed, note_sent
from .listeners import Listener, claude_config_dir, read_listener, registry_path
from .records import DeliveryState
from .render import render_mail, spilled

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..jsontypes import JsonObject

LIVE_ENV = "CODEX_BRIDGE_LIVE"  # "0" turns live delivery off
CONFIRM_ENV = "CODEX_BRIDGE_LIVE_CONFIRM"
DEFAULT_CONFIRM = 2.0  # s: an idle session takes a frame in 0.05–0.2 s (measured)
KEEP_S = 120.0  # how long a put-back record is kept to catch a late arrival
# A frame written to a live session's socket with no bad receipt is in its hands: under
# load Claude took it in after more than 2 s (measured in the journeys), and putting it
# back for the hook then delivered it twice. Only this long a silence — no enqueue, no
# delivery in the transcript — counts as "never taken".
NEVER_TAKEN_S = 30.0
BYPASS = "bypassPermissions"
# A watcher that wrote its wake and exited 2 is followed, within a fraction of a second,
# by Claude's `queue-operation` enqueue of that wake in the transcript (measured: see
# docs/reverse-channel.md, "A killed watcher"); one killed first never wakes anything.
# Only a wake whose watcher is gone and that the transcript has not shown for this long
# is taken to have never reached the session, and its mail goes back to the mailbox.
WAKE_GRACE_S = 10.0

# A live record's state: DELIVERING (written to the socket, nothing seen yet), QUEUED (in
# the session's own queue), FAILED (put back into the mailbox; kept to catch a late
# arrival). A record seen DELIVERED is removed.


class Route(WireEnum):
    """How a push's mail goes to the session."""

    LIVE = "live"  # in the running session (or its own queue) now
    NEXT_STOP = "next-stop"  # waits for the session's next stop (the Stop hook)
    NONE = "none"  # nothing was pending
    TAKEN = "taken"  # the hook, the watcher or another push took it first


class Via(WireEnum):
    """Which road an in-flight record's mail took into the session."""

    FRAME = "frame"  # a frame written to the session's cross-session inbox
    WAKE = "wake"  # the asyncRewake watcher's exit 2, the mail on its stderr


class Outcome(NamedTuple):
    delivery: Route
    reason: str | None
    msg_id: str | None = None
    mails: int = 0
    # LIVE only: the session's transcript shows the frame (taken in, or in its own
    # queue) — False while it is merely handed over, which a later reconcile settles
    confirmed: bool = False


class Reach(TypedDict):
    """How mail for a mailbox would be delivered right now (`inbox list`, doctor, MCP)."""

    live: bool
    session: str | None  # the registry's busy | idle, when live
    reason: str | None  # why not live
    drift: bool  # the session speaks a protocol we do not know


# --- the decisions (pure) ------------------------------------------------------------------

class Target(NamedTuple):
    socket: str
    session_id: str
    pid: int
    transcript: str
    status: str  # the registry's: busy | idle


class Verdict(NamedTuple):
    target: Target | None
    reason: str | None  # why not live (None when target is set)
    drift: bool = False  # the session speaks a protocol we do not know


def target(listener: Listener | None, registry: SessionEntry | None,
           settings: Iterable[tuple[str, Mapping[str, object]]], env: Mapping[str, str],
           socket_exists: bool) -> Verdict:
    """Whether mail for this listener may go live, and to which socket."""
    if env.get(LIVE_ENV, "").strip() == "0":
        return Verdict(None, f"live delivery is off (${LIVE_ENV}=0)")
    if listener is None:
        return Verdict(None, "no Claude session has listened on this mailbox yet")
    socket, session = listener.messaging_socket, listener.session_id
    pid, transcript = listener.claude_pid, listener.transcript_path
    if socket is None or session is None or transcript is None or pid is None:
        return Verdict(None, "the session has no cross-session inbox address (started with "
                             "--bare, the kill switch CLAUDE_CODE_HARBOR_KITE=0, or an older "
                             "hook)")
    if listener.permission_mode == BYPASS:
        return Verdict(None, "the session runs in bypassPermissions mode, which holds peer "
                             "messages for the user (codexbridge never asserts a mode)")
    if registry is None or registry.session_id != session:
        return Verdict(None, "the session is not running (the next session on this mailbox "
                             "gets the mail at its first stop)")
    if registry.peer_protocol != inbox_socket.PEER_PROTOCOL:
        return Verdict(None, f"Claude Code's cross-session protocol changed (peerProtocol "
                             f"{registry.peer_protocol!r}, codexbridge speaks "
                             f"{inbox_socket.PEER_PROTOCOL})", drift=True)
    if registry.socket != socket or not socket_exists:
        return Verdict(None, "the session's inbox socket is gone")
    policy = inbox_socket.inbound_policy(settings)
    if policy is not None:
        return Verdict(None, f'the user\'s setting crossSessionInbound="{policy[0]}" '
                             f"({policy[1]}) wins: not pushed")
    return Verdict(Target(socket, session, pid, transcript, registry.status or "unknown"),
                   None)


def transcript_state(lines: Iterable[bytes], msg_id: str) -> DeliveryState | None:
    """What the transcript lines say about our frame: DELIVERED (the session turned it
    into a user turn / an in-turn attachment), QUEUED (in the session's own queue: it
    arrives when the running turn ends) or None.

    Measured: a frame delivered as its own turn leaves a `user` record whose
    `origin.msg_id` is ours; one delivered mid-tool a `queued_command` attachment with
    it; one still waiting only a `queue-operation` enqueue whose content (our text)
    carries the id. Dropped and held frames leave nothing of the kind.
    """
    state: DeliveryState | None = None
    for record in records_with(lines, msg_id):
        origin = record.attachment_origin if record.kind == "attachment" else record.origin
        if (record.kind in ("user", "attachment") and origin is not None
                and origin.msg_id == msg_id):
            return DeliveryState.DELIVERED
        if record.enqueued:
            state = DeliveryState.QUEUED
    return state


def wake_state(lines: Iterable[bytes], needle: str) -> DeliveryState | None:
    """What the transcript lines say about a watcher's wake whose text carries `needle`
    (the id of its first mail): DELIVERED once the session turned it into a turn (a
    `user` record of origin `task-notification`, or an `attachment` inside a running
    turn), QUEUED while it waits in the session's own queue (a `queue-operation`
    enqueue: Claude has it), else None — a watcher killed before it exited woke nothing.

    Measured on 2.1.332: a wake is an enqueue whose content is the watcher's stderr, then
    a `user` record with `origin.kind` `task-notification` carrying the same text. A tool
    result that happens to quote the id is not a wake."""
    state: DeliveryState | None = None
    for record in records_with(lines, needle):
        if record.enqueued:
            state = DeliveryState.QUEUED
        elif record.kind == "attachment" or (
                record.kind == "user" and not record.tool_result
                and record.origin is not None and record.origin.kind == "task-notification"):
            return DeliveryState.DELIVERED
    return state


# --- carrying it out -----------------------------------------------------------------------

def _confirm_window() -> float:
    try:
        return max(0.2, float(os.environ.get(CONFIRM_ENV) or DEFAULT_CONFIRM))
    except ValueError:
        return DEFAULT_CONFIRM


def _settings(listener: Listener) -> list[tuple[str, JsonObject]]:
    """The settings files whose crossSessionInbound counts: the user's, the project's."""
    paths = [os.path.join(claude_config_dir(listener.config_dir), "settings.json")]
    if listener.cwd is not None:
        paths += [os.path.join(listener.cwd, ".claude", n) for n in ("settings.json",
                                                                     "settings.local.json")]
    return [(p, d) for p in paths if (d := read_object(p)) is not None]


def _registry(listener: Listener) -> SessionEntry | None:
    """The session's registry entry — None once its process is gone: a Claude killed
    (SIGKILL) leaves the file and the socket behind (measured)."""
    pid = listener.claude_pid
    path = registry_path(listener.config_dir, pid)
    if path is None or pid is None or not pid_alive(pid):
        return None
    data = read_object(path)
    return None if data is None else SessionEntry.from_json(data)


def verdict(inbox: str, name: str) -> Verdict:
    listener = read_listener(inbox, name)
    if listener is None:
        return target(None, None, [], os.environ, False)
    sock = listener.messaging_socket
    return target(listener, _registry(listener), _settings(listener), os.environ,
                  sock is not None and os.path.exists(sock))


def status(inbox: str, name: str) -> Reach:
    """For `inbox list` / doctor / MCP: how mail for NAME would be delivered right now."""
    v = verdict(inbox, name)
    if v.target is not None:
        return {"live": True, "session": v.target.status, "reason": None, "drift": False}
    return {"live": False, "session": None, "reason": v.reason, "drift": v.drift}


def _transcript_lines(path: str | None, offset: int) -> Iterator[bytes]:
    if not path:
        return
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            yield from fh
    except (OSError, ValueError):  # (ValueError: a NUL in a path from a hook's input)
        return


LIVE_VERSION = 1  # NAME.live-<msg_id>.json's format (files without one are version 1)
# What an older codexbridge wrote for the same states: a record left in flight across an
# upgrade is still settled on time, never left waiting for the session to end.
_OLD_STATES = {"sent": DeliveryState.DELIVERING, "put-back": DeliveryState.FAILED}


@dataclass
class LiveRecord:
    """NAME.live-<msg_id>.json: a batch of mail on its way into a session, by a frame
    (`socket`) or a watcher's wake (`needle`: its first mail id), until it is settled.
    `read` and `save` are its one reader and writer."""

    msg_id: str
    mailbox: str
    state: DeliveryState | None  # None: a state this codexbridge does not know
    at: float | None
    mails: list[JsonObject]  # each mail's JSON line, as the mailbox held it
    via: Via = Via.FRAME
    needle: str | None = None
    session_id: str | None = None
    claude_pid: int | None = None
    transcript: str | None = None
    offset: int = 0
    socket: str | None = None
    reason: str | None = None
    settled_at: float | None = None
    version: int = field(default=LIVE_VERSION)

    @classmethod
    def read(cls, path: str) -> LiveRecord | None:
        """The record in `path`; None when it is gone (settled meanwhile). A damaged
        file raises DamagedStateError naming it."""
        found = read_keyed(path, "live delivery record", "msg_id")
        if found is None:
            return None
        data, version, msg_id = found
        raw = data.get("state")
        return cls(
            msg_id, opt_str(data.get("mailbox")) or "",
            _OLD_STATES[raw] if isinstance(raw, str) and raw in _OLD_STATES
            else DeliveryState.parse(raw),
            opt_float(data.get("at")), objs(data.get("mails")),
            via=Via.parse(data.get("via")) or Via.FRAME, needle=opt_str(data.get("needle")),
            session_id=opt_str(data.get("session_id")),
            claude_pid=opt_int(data.get("claude_pid")),
            transcript=opt_str(data.get("transcript")),
            offset=opt_int(data.get("offset")) or 0, socket=opt_str(data.get("socket")),
            reason=opt_str(data.get("reason")), settled_at=opt_float(data.get("settled_at")),
            version=version)

    def save(self, path: str) -> None:
        data: JsonObject = {k: v for k, v in asdict(self).items() if v is not None}
        data.update(version=LIVE_VERSION, via=self.via.value,
                    state=None if self.state is None else self.state.value)
        write_private(path, json.dumps(data, ensure_ascii=False).encode("utf-8"),
                      durable=True)

    def parsed_mails(self) -> list[Mail]:
        out = []
        for raw in self.mails:
            parsed = parse_line(json.dumps(raw).encode("utf-8"))
            if isinstance(parsed, Mail):
                out.append(parsed)
        return out


def _settle(inbox: str, name: str, path: str, record: LiveRecord,
            state: DeliveryState | None, why: str | None) -> None:
    """Apply what we now know about one live record."""
    mails = record.parsed_mails()
    if state is DeliveryState.DELIVERED:
        store.confirm(inbox, name, [m.mail_id for m in mails if m.mail_id])
        # The frame is in front of Claude: its requests are being handled now, and the
        # turn that took it in answers them (whoever settles it first notes it; noting
        # twice counts once).

        note_handed(record.session_id, name, mails, transcript=record.transcript,
                    offset=record.offset, claude_pid=record.claude_pid)
        _remove(path)
        return
    if why is not None and record.state is not DeliveryState.FAILED:
        store.put_back(inbox, name, mails)
        record.state, record.reason, record.settled_at = DeliveryState.FAILED, why, time.time()
        record.save(path)
        return
    if state is DeliveryState.QUEUED and record.state is DeliveryState.DELIVERING:
        record.state = DeliveryState.QUEUED
        record.save(path)


def _answers(record: LiveRecord, answer: str | None) -> bool:
    """`answer` names a request token one of the record's mails carried."""
    if not answer:
        return False
    tokens = (m.extra.get("request") for m in record.parsed_mails())
    return any(isinstance(t, str) and t and t in answer for t in tokens)


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


_HOLDING: list[int] = []  # descriptors kept open (and locked) until this process ends


def _hold(path: str) -> None:
    """Lock in-flight record `path` until this process ends. The flock dies with its
    process, so a reconcile elsewhere tells a watcher still on its way to its exit from
    one that was killed by trying the lock (a pid could have been reused)."""
    fd = open_state(path, os.O_RDONLY)
    lock(fd)
    _HOLDING.append(fd)


@contextlib.contextmanager
def wake(inbox: str, name: str, *, session_id: str | None, transcript: str | None,
         claude_pid: int | None) -> Iterator[str | None]:
    """`with wake(…) as text:` — NAME's pending mail as the text the watcher writes to
    stderr before it exits 2 (None: only duplicates were left).

    The mail is not marked delivered here: Claude takes a wake only when the watcher
    exits 2, and a watcher killed before that wakes nothing (measured on 2.1.332). So the
    batch moves into an in-flight record (`via: wake`, held by this process until it
    ends) and a later reconcile settles it from the session's transcript — the wake
    there: delivered; the watcher gone and no wake after WAKE_GRACE_S: back into the
    mailbox. With no transcript or mail id to look for, the batch is committed once the
    text was written (the old way)."""

    with store.take_for_claude(inbox, name) as batch:
        if batch.empty:
            batch.commit()
            yield None
            return
        text = render_mail(name, spilled(inbox, name, batch.mails), batch.rejected,
                           rejected_path(inbox, name))
        needle = next((m.mail_id for m in batch.mails if m.mail_id), None)
        offset = transcript_end(transcript)
        if not (needle and transcript and "\0" not in transcript and session_id):
            yield text
            batch.commit()
            note_handed(session_id, name, batch.mails, transcript=transcript, offset=offset,
                        claude_pid=claude_pid)
            return
        msg_id = str(uuid.uuid4())
        path = live_path(inbox, name, msg_id)
        LiveRecord(msg_id, name, DeliveryState.DELIVERING, time.time(),
                   [m.to_json() for m in batch.mails], via=Via.WAKE, needle=needle,
                   session_id=session_id, claude_pid=claude_pid, transcript=transcript,
                   offset=offset).save(path)
        _hold(path)
        batch.commit(delivered=False)  # the record holds the mail now
        mails = batch.mails
    store.reached("before_wake")
    yield text
    store.reached("after_wake")
    note_sent(session_id, claude_pid, mails)


def reconcile(inbox: str, name: str, *, answer: str | None = None) -> None:
    """Settle every live record of NAME: delivered → remembered; the session gone, or
    never a sign of it → back to the mailbox; an old put-back record → forgotten.

    `answer`, at a stop, is the final message of the turn now ending: when it names the
    request token a live frame carried, the session took that frame in even if its
    transcript does not show it yet (an interactive session's transcript can lag its Stop
    hook — the journeys caught the answer never sent back when it did)."""
    paths = live_files(inbox, name)
    if not paths:
        return
    current = verdict(inbox, name).target
    now = time.time()
    for path in paths:
        try:
            record = LiveRecord.read(path)
        except DamagedStateError:
            # not ours to settle (no mail we can trust in it): left for doctor to name
            continue
        if record is None:
            continue  # settled meanwhile (records are written by rename, never torn)
        msg_id = record.msg_id
        lines = _transcript_lines(record.transcript, record.offset)
        if record.via is Via.WAKE:
            state = wake_state(lines, record.needle or msg_id)
            # Live delivery may be off while the watcher wakes: the session is gone only
            # when its Claude is.
            pid = record.claude_pid
            gone = pid is not None and not pid_alive(pid)
        else:
            state = transcript_state(lines, msg_id)
            gone = current is None or current.session_id != record.session_id
        if state is not DeliveryState.DELIVERED and not gone and _answers(record, answer):
            state = DeliveryState.DELIVERED
        age = now - (record.at or now)
        why = None
        if state is not DeliveryState.DELIVERED:
            if gone:
                why = "the session ended before the message reached it"
            elif record.via is Via.WAKE:
                if state is None and age > WAKE_GRACE_S and not held(path):
                    why = "the watcher was stopped before it could wake the session"
            elif (state is None and record.state is DeliveryState.DELIVERING
                    and age > NEVER_TAKEN_S):
                why = "the session never took the message"
        _settle(inbox, name, path, record, state, why)
        if record.state is DeliveryState.FAILED and age > KEEP_S:
            _remove(path)


def deliver_now(inbox: str, name: str, *, interrupt: bool = False) -> Outcome:
    """Push NAME's pending mail into its session at once, or say why the hook will."""
    reconcile(inbox, name)
    v = verdict(inbox, name)
    if v.target is None:
        return Outcome(Route.NEXT_STOP, v.reason)
    msg_id = str(uuid.uuid4())  # Claude keeps a msg_id only if it is a UUID (measured)
    reply = inbox_socket.bind_reply(v.target.socket)
    try:
        return _push(inbox, name, v.target, msg_id, reply, interrupt)
    finally:
        if reply is not None:
            reply[0].close()
            _remove(reply[1])


def _push(inbox: str, name: str, to: Target, msg_id: str,
          reply: tuple[socket.socket, str] | None, interrupt: bool) -> Outcome:
    """Take the mailbox into a live record, send it as one frame, and confirm it."""

    path = live_path(inbox, name, msg_id)
    with store.take_for_claude(inbox, name) as batch:
        if not batch.mails:
            batch.commit()  # only duplicates or bad lines: nothing to say
            return Outcome(Route.NONE, None)
        text = render_mail(name, spilled(inbox, name, batch.mails), batch.rejected, None,
                           live_id=msg_id)
        count = len(batch.mails)
        record = LiveRecord(msg_id, name, DeliveryState.DELIVERING, time.time(),
                            [m.to_json() for m in batch.mails], socket=to.socket,
                            session_id=to.session_id, claude_pid=to.pid,
                            transcript=to.transcript, offset=transcript_end(to.transcript))
        record.save(path)
        batch.commit(delivered=False)  # the live record holds the mail now
    data = inbox_socket.frame(text, msg_id, to.session_id, reply[1] if reply else None,
                 interrupt=interrupt)
    if data is None:
        why = "too large for one live frame"
        _settle(inbox, name, path, record, None, why)
        return Outcome(Route.NEXT_STOP, why, msg_id, count)
    try:
        inbox_socket.send(to.socket, data)
        store.reached("after_send")  # a pusher killed here: the tests stop it there
    except OSError as exc:
        _settle(inbox, name, path, record, None, f"the session's socket refused it ({exc})")
        return Outcome(Route.NEXT_STOP, "the session's inbox did not answer", msg_id, count)

    note_sent(to.session_id, to.pid, record.parsed_mails())
    return _confirm(inbox, name, path, record, reply[0] if reply else None, count)


def _confirm(inbox: str, name: str, path: str, record: LiveRecord,
             server: socket.socket | None, count: int) -> Outcome:
    msg_id = record.msg_id
    end = time.monotonic() + _confirm_window()
    transcript, offset = record.transcript, record.offset
    state: DeliveryState | None = None
    while True:
        for receipt in (inbox_socket.receipts(server, 0.02) if server else ()):
            problem = inbox_socket.receipt_problem(receipt, msg_id)
            if problem:
                _settle(inbox, name, path, record, None, problem)
                return Outcome(Route.NEXT_STOP, problem, msg_id, count)
        if server is None:
            time.sleep(0.02)
        state = transcript_state(_transcript_lines(transcript, offset), msg_id) or state
        if state is DeliveryState.DELIVERED:
            _settle(inbox, name, path, record, state, None)
            return Outcome(Route.LIVE, None, msg_id, count, confirmed=True)
        if time.monotonic() >= end:
            break
    if state is DeliveryState.QUEUED:
        _settle(inbox, name, path, record, state, None)
        return Outcome(Route.LIVE, "in the session's queue: it reaches Claude as soon as the "
                                   "running turn ends (or at its next tool result)",
                       msg_id, count, confirmed=True)
    # Written, no bad receipt, the session alive: in its hands, not yet in its
    # transcript. Later reconciles settle it (delivered; or back to the mailbox if the
    # session ends or never shows it).
    return Outcome(Route.LIVE, "handed to the running session; not yet in its transcript "
                               f"after {_confirm_window():g} s (it is busy or slow)",
                   msg_id, count)
