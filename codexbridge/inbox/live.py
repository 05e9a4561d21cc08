"""Live delivery: mail pushed into the running Claude session's cross-session inbox.

    deliver_now(inbox, name)   after a push: take the mailbox's pending mail, send it as
                               one frame, confirm it; else put it back for the Stop hook
    reconcile(inbox, name)     settle what earlier pushes left in flight (the hook and
                               every push call it first)
    status(inbox, name)        reachable now (busy / idle) or only at the next stop, and why

Exactly once, never lost. The mailbox stays the durable record:

1. The batch is taken (the Stop hook's take-by-rename) and written, with the frame's
   `msg_id`, into `NAME.live-<msg_id>.json` before the frame is sent; only then are the
   taken files removed. A pusher killed at any point leaves either the taken files (the
   next take recovers them) or the live record (the next reconcile settles it).
2. Confirmation comes from the session's transcript (measured: the one reliable
   signal — Claude's receipts only ever report bad news): a `user` record or an in-turn
   attachment with our `msg_id` → delivered, the ids are remembered so no later take
   repeats them; an `enqueue` of our text → in the session's own queue, it arrives when
   the running turn ends, settled by a later reconcile.
3. A bad receipt (held, refused, dropped …), the session gone, or no sign of the frame
   in the transcript for 30 s → the mail goes back into the mailbox for the Stop hook.
   The record stays a while: should the frame surface in the transcript after all, its
   ids are remembered and the hook skips them. Mere slowness is not a failure: a push
   waits `CODEX_BRIDGE_LIVE_CONFIRM` seconds for a sign and then reports the frame as
   handed to the session, still in flight; later stops and pushes settle it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any, NamedTuple

from ..conversation.handling import transcript_end
from ..host.jsonfile import loads_json, read_object
from ..host.private import write_private
from ..host.procs import pid_alive
from . import live_rules as rules
from . import store
from .lines import Mail, parse_line
from .listeners import read_listeners

CONFIRM_ENV = "CODEX_BRIDGE_LIVE_CONFIRM"
DEFAULT_CONFIRM = 2.0  # s: an idle session takes a frame in 0.05–0.2 s (measured)
KEEP_S = 120.0  # how long a put-back record is kept to catch a late arrival
# A frame written to a live session's socket with no bad receipt is in its hands: under
# load Claude took it in after more than 2 s (measured in the journeys), and putting it
# back for the hook then delivered it twice. Only this long a silence — no enqueue, no
# delivery in the transcript — counts as "never taken".
NEVER_TAKEN_S = 30.0
LIVE_MARK = ".live-"

SENT = "sent"  # written to the socket, nothing seen yet
QUEUED = "queued"  # in the session's own queue
PUT_BACK = "put-back"  # returned to the mailbox; kept to catch a late arrival


class Outcome(NamedTuple):
    delivery: str  # "live" | "next-stop" | "none" (nothing was pending)
    reason: str | None
    msg_id: str | None = None
    mails: int = 0


def _confirm_window() -> float:
    try:
        return max(0.2, float(os.environ.get(CONFIRM_ENV) or DEFAULT_CONFIRM))
    except ValueError:
        return DEFAULT_CONFIRM


def live_files(inbox: str, name: str) -> list[str]:
    prefix = f"{name}{LIVE_MARK}"
    try:
        with os.scandir(inbox) as entries:
            return sorted(e.path for e in entries
                          if e.name.startswith(prefix) and e.name.endswith(".json"))
    except FileNotFoundError:
        return []


def _settings(listener: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The settings files whose crossSessionInbound counts: the user's, the project's."""
    config = listener.get("config_dir") or os.path.join(os.path.expanduser("~"), ".claude")
    paths = [os.path.join(config, "settings.json")]
    cwd = listener.get("cwd")
    if isinstance(cwd, str):
        paths += [os.path.join(cwd, ".claude", n) for n in ("settings.json",
                                                             "settings.local.json")]
    return [(p, d) for p in paths if (d := read_object(p)) is not None]


def _registry(listener: dict[str, Any]) -> dict[str, Any] | None:
    """The session's registry entry — None once its process is gone: a Claude killed
    (SIGKILL) leaves the file and the socket behind (measured)."""
    config = listener.get("config_dir") or os.path.join(os.path.expanduser("~"), ".claude")
    pid = str(listener.get("claude_pid") or "")
    if not pid.isdigit() or not pid_alive(int(pid)):
        return None
    return read_object(os.path.join(config, "sessions", f"{pid}.json"))


def verdict(inbox: str, name: str) -> rules.Verdict:
    listener = read_listeners(inbox).get(name)
    if not listener:
        return rules.target(None, None, [], os.environ, False)
    sock = listener.get("messaging_socket")
    return rules.target(listener, _registry(listener), _settings(listener), os.environ,
                        isinstance(sock, str) and os.path.exists(sock))


def status(inbox: str, name: str) -> dict[str, Any]:
    """For `inbox list` / doctor / MCP: how mail for NAME would be delivered right now."""
    v = verdict(inbox, name)
    if v.target is not None:
        return {"live": True, "session": v.target.status, "reason": None, "drift": False}
    return {"live": False, "session": None, "reason": v.reason, "drift": v.drift}


def _transcript_lines(path: str, offset: int) -> Iterator[bytes]:
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            yield from fh
    except OSError:
        return


def _bind_reply(session_socket: str) -> tuple[socket.socket, str] | None:
    """Our receipt address, in the session's own socket dir (receipts only go there)."""
    path = os.path.join(os.path.dirname(session_socket),
                        f"cb{os.getpid()}-{secrets.token_hex(2)}.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        sock.listen(8)
        sock.setblocking(False)
    except OSError:
        sock.close()
        return None
    return sock, path


def _receipts(server: socket.socket, wait: float) -> Iterator[dict[str, Any]]:
    ready, _, _ = select.select([server], [], [], wait)
    if not ready:
        return
    try:
        conn, _ = server.accept()
    except OSError:
        return
    with conn:
        conn.settimeout(0.5)
        data = b""
        try:
            while chunk := conn.recv(65536):
                data += chunk
        except OSError:
            pass
    for line in data.splitlines():
        try:
            receipt = loads_json(line)
        except ValueError:
            continue
        if isinstance(receipt, dict):
            yield receipt


def _send(path: str, data: bytes) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(2.0)
        conn.connect(path)
        conn.sendall(data)
        conn.shutdown(socket.SHUT_WR)


def _mails(record: dict[str, Any]) -> list[Mail]:
    out = []
    for raw in record.get("mails") or []:
        parsed = parse_line(json.dumps(raw).encode("utf-8"))
        if isinstance(parsed, Mail):
            out.append(parsed)
    return out


def _settle(inbox: str, name: str, path: str, record: dict[str, Any], state: str | None,
            why: str | None) -> None:
    """Apply what we now know about one live record."""
    mails = _mails(record)
    if state == rules.DELIVERED:
        store.confirm(inbox, name, [m.mail_id for m in mails if m.mail_id])
        # The frame is in front of Claude: its requests are being handled now, and the
        # turn that took it in answers them (whoever settles it first notes it; noting
        # twice counts once).
        from .replies import note_handed

        session, transcript = record.get("session_id"), record.get("transcript")
        pid = record.get("claude_pid")
        note_handed(session if isinstance(session, str) else None, name, mails,
                    transcript=transcript if isinstance(transcript, str) else None,
                    offset=int(record.get("offset") or 0),
                    claude_pid=pid if isinstance(pid, int) else None)
        _remove(path)
        return
    if why is not None and record.get("state") != PUT_BACK:
        store.put_back(inbox, name, mails)
        record.update(state=PUT_BACK, reason=why, settled_at=time.time())
        write_private(path, json.dumps(record).encode("utf-8"))
        return
    if state == rules.QUEUED and record.get("state") == SENT:
        record["state"] = QUEUED
        write_private(path, json.dumps(record).encode("utf-8"))


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def reconcile(inbox: str, name: str) -> None:
    """Settle every live record of NAME: delivered → remembered; the session gone, or
    never a sign of it → back to the mailbox; an old put-back record → forgotten."""
    paths = live_files(inbox, name)
    if not paths:
        return
    current = verdict(inbox, name).target
    now = time.time()
    for path in paths:
        record = read_object(path)
        if record is None or not isinstance(record.get("msg_id"), str):
            continue  # being written right now (atomic rename), or not ours
        state = rules.transcript_state(
            _transcript_lines(str(record.get("transcript")), int(record.get("offset") or 0)),
            record["msg_id"])
        gone = current is None or current.session_id != record.get("session_id")
        age = now - float(record.get("at") or now)
        why = None
        if state != rules.DELIVERED:
            if gone:
                why = "the session ended before the message reached it"
            elif state is None and record.get("state") == SENT and age > NEVER_TAKEN_S:
                why = "the session never took the message"
        _settle(inbox, name, path, record, state, why)
        if record.get("state") == PUT_BACK and age > KEEP_S:
            _remove(path)


def deliver_now(inbox: str, name: str, *, interrupt: bool = False) -> Outcome:
    """Push NAME's pending mail into its session at once, or say why the hook will."""
    reconcile(inbox, name)
    v = verdict(inbox, name)
    if v.target is None:
        return Outcome("next-stop", v.reason)
    target = v.target
    from .hook import render_mail
    from .spill import spilled

    msg_id = str(uuid.uuid4())  # Claude keeps a msg_id only if it is a UUID (measured)
    path = os.path.join(inbox, f"{name}{LIVE_MARK}{msg_id}.json")
    reply = _bind_reply(target.socket)
    try:
        with store.take(inbox, name) as batch:
            if not batch.mails:
                batch.commit()  # only duplicates or bad lines: nothing to say
                return Outcome("none", None)
            text = render_mail(name, spilled(inbox, name, batch.mails), batch.rejected, None,
                               live_id=msg_id)
            count = len(batch.mails)
            record = {"msg_id": msg_id, "mailbox": name, "state": SENT, "at": time.time(),
                      "socket": target.socket, "session_id": target.session_id,
                      "claude_pid": target.pid,
                      "transcript": target.transcript, "offset": transcript_end(target.transcript),
                      "mails": [m.to_json() for m in batch.mails]}
            write_private(path, json.dumps(record, ensure_ascii=False).encode("utf-8"))
            batch.commit(delivered=False)  # the live record holds the mail now
        data = rules.frame(text, msg_id, target.session_id, reply[1] if reply else None,
                           interrupt=interrupt)
        if data is None:
            why = "too large for one live frame"
            _settle(inbox, name, path, record, None, why)
            return Outcome("next-stop", why, msg_id, count)
        try:
            _send(target.socket, data)
            store.reached("after_send")  # a pusher killed here: the tests stop it there
        except OSError as exc:
            _settle(inbox, name, path, record, None, f"the session's socket refused it ({exc})")
            return Outcome("next-stop", "the session's inbox did not answer", msg_id, count)
        from .replies import note_sent

        note_sent(target.session_id, target.pid, _mails(record))
        return _confirm(inbox, name, path, record, reply[0] if reply else None, count)
    finally:
        if reply is not None:
            reply[0].close()
            _remove(reply[1])


def _confirm(inbox: str, name: str, path: str, record: dict[str, Any],
             server: socket.socket | None, count: int) -> Outcome:
    msg_id = record["msg_id"]
    end = time.monotonic() + _confirm_window()
    offset = int(record["offset"])
    state: str | None = None
    while True:
        for receipt in (_receipts(server, 0.02) if server else ()):
            problem = rules.receipt_problem(receipt, msg_id)
            if problem:
                _settle(inbox, name, path, record, None, problem)
                return Outcome("next-stop", problem, msg_id, count)
        if server is None:
            time.sleep(0.02)
        seen = rules.transcript_state(_transcript_lines(record["transcript"], offset), msg_id)
        state = seen or state
        if state == rules.DELIVERED:
            _settle(inbox, name, path, record, state, None)
            return Outcome("live", None, msg_id, count)
        if time.monotonic() >= end:
            break
    if state == rules.QUEUED:
        _settle(inbox, name, path, record, state, None)
        return Outcome("live", "in the session's queue: it reaches Claude as soon as the "
                               "running turn ends (or at its next tool result)", msg_id, count)
    # Written, no bad receipt, the session alive: in its hands, not yet in its
    # transcript. Later reconciles settle it (delivered; or back to the mailbox if the
    # session ends or never shows it).
    return Outcome("live", "handed to the running session; not yet in its transcript "
                           f"after {_confirm_window():g} s (it is busy or slow)", msg_id, count)
