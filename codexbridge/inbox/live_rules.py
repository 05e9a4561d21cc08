"""Live delivery into a running Claude Code session — the pure decisions.

Claude Code 2.1.332 runs a cross-session inbox on a unix socket in every session (the
mechanism behind its own SendMessage tool; measured in docs/protocol-notes.md, "Claude
Code's cross-session inbox"). Writing one frame there starts a turn within ~0.1 s when
the session is idle, lands right after the turn (or inside it, at the next tool result)
when it is busy. It is an internal protocol, so it is a fast path over the mailbox,
never the only path: anything here that is not exactly as measured means "the Stop hook
delivers it", with the reason said.

This module decides, from data read elsewhere:

    target()          may this mailbox's session be reached now, and where
    frame()           the one frame for a batch of mail (never a forged mode)
    transcript_state  has the session received / queued our frame (by its msg_id)
    receipt_problem   what a peer_message_status receipt says went wrong
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from ..host.jsonfile import loads_json

LIVE_ENV = "CODEX_BRIDGE_LIVE"  # "0" turns live delivery off
PEER_PROTOCOL = 1  # the registry's peerProtocol we speak (msgV 1 frames)
BYPASS = "bypassPermissions"
# The receipt statuses that mean "not delivered" (delivered comes only for a released
# hold, which we never cause: we do not push to sessions that hold).
BAD_STATUSES = ("held", "denied", "expired", "refused", "dropped")


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


def _policy(settings: Iterable[tuple[str, Mapping[str, Any]]]) -> tuple[str, str] | None:
    """The strictest crossSessionInbound among the settings files, with its file."""
    rank = {"accept": 0, "hold": 1, "refuse": 2}
    worst: tuple[str, str] | None = None
    for path, data in settings:
        value = data.get("crossSessionInbound")
        if isinstance(value, str) and value in rank and value != "accept" and (
                worst is None or rank[value] > rank[worst[0]]):
            worst = (value, path)
    return worst


def target(listener: Mapping[str, Any] | None, registry: Mapping[str, Any] | None,
           settings: Iterable[tuple[str, Mapping[str, Any]]], env: Mapping[str, str],
           socket_exists: bool) -> Verdict:
    """Whether mail for this listener may go live, and to which socket."""
    if env.get(LIVE_ENV, "").strip() == "0":
        return Verdict(None, f"live delivery is off (${LIVE_ENV}=0)")
    if not listener:
        return Verdict(None, "no Claude session has listened on this mailbox yet")
    socket = listener.get("messaging_socket")
    session = listener.get("session_id")
    pid_raw = listener.get("claude_pid")
    transcript = listener.get("transcript_path")
    if not (isinstance(socket, str) and isinstance(session, str) and isinstance(transcript, str)
            and str(pid_raw or "").isdigit()):
        return Verdict(None, "the session has no cross-session inbox address (started with "
                             "--bare, the kill switch CLAUDE_CODE_HARBOR_KITE=0, or an older "
                             "hook)")
    if listener.get("permission_mode") == BYPASS:
        return Verdict(None, "the session runs in bypassPermissions mode, which holds peer "
                             "messages for the user (codexbridge never asserts a mode)")
    if not registry or registry.get("sessionId") != session:
        return Verdict(None, "the session is not running (the next session on this mailbox "
                             "gets the mail at its first stop)")
    protocol = registry.get("peerProtocol")
    if protocol != PEER_PROTOCOL:
        return Verdict(None, f"Claude Code's cross-session protocol changed (peerProtocol "
                             f"{protocol!r}, codexbridge speaks {PEER_PROTOCOL})", drift=True)
    if registry.get("messagingSocketPath") != socket or not socket_exists:
        return Verdict(None, "the session's inbox socket is gone")
    policy = _policy(settings)
    if policy is not None:
        return Verdict(None, f'the user\'s setting crossSessionInbound="{policy[0]}" '
                             f"({policy[1]}) wins: not pushed")
    status = registry.get("status")
    return Verdict(Target(socket, session, int(str(pid_raw)), transcript,
                          status if isinstance(status, str) else "unknown"), None)


FRAME_MAX = 900_000  # bytes; Claude Code reads at most 1 MiB a line (measured)


def frame(text: str, msg_id: str, session_id: str, reply_path: str | None, *,
          interrupt: bool = False) -> bytes | None:
    """One msgV-1 frame: our mail as a peer message, or None when it would not fit in
    one line. `next` lands after the running turn (or at its next tool result); `now`
    would cut the reply the user is watching, so only an explicit interrupt asks for
    it. `session_id` guards against a reused pid. No `from-mode` envelope, ever."""
    body: dict[str, Any] = {"msgV": 1, "msg_id": msg_id, "type": "user",
                            "message": {"role": "user", "content": text},
                            "priority": "now" if interrupt else "next",
                            "session_id": session_id}
    if reply_path:
        body["from"] = f"uds:{reply_path}"  # where Claude sends its receipts
    data = (json.dumps(body, ensure_ascii=False) + "\n").encode("utf-8")
    return data if len(data) <= FRAME_MAX else None


DELIVERED = "delivered"  # the session turned it into a user turn / an in-turn attachment
QUEUED = "queued"  # in the session's own queue: it arrives when the running turn ends


def transcript_state(lines: Iterable[bytes], msg_id: str) -> str | None:
    """What the transcript lines say about our frame: DELIVERED, QUEUED or None.

    Measured: a frame delivered as its own turn leaves a `user` record whose
    `origin.msg_id` is ours; one delivered mid-tool a `queued_command` attachment with
    it; one still waiting only a `queue-operation` enqueue whose content (our text)
    carries the id. Dropped and held frames leave nothing of the kind.
    """
    needle = msg_id.encode("ascii")
    state: str | None = None
    for raw in lines:
        if needle not in raw:
            continue
        try:
            record = loads_json(raw)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        kind = record.get("type")
        origin = record.get("origin")
        if kind == "attachment" and isinstance(record.get("attachment"), dict):
            origin = record["attachment"].get("origin")
        if (kind in ("user", "attachment") and isinstance(origin, dict)
                and origin.get("msg_id") == msg_id):
            return DELIVERED
        if kind == "queue-operation" and record.get("operation") == "enqueue":
            state = QUEUED
    return state


def receipt_problem(receipt: Mapping[str, Any], msg_id: str) -> str | None:
    """Why a `peer_message_status` receipt says our frame was not delivered, or None."""
    if receipt.get("action") != "peer_message_status":
        return None
    ours = receipt.get("orig_msg_id") == msg_id or msg_id in (receipt.get("dropped_msg_ids")
                                                              or [])
    status = receipt.get("status")
    if not ours or status not in BAD_STATUSES:
        return None
    detail = receipt.get("drop_reason") or receipt.get("status_detail")
    return f"Claude Code {status} it" + (f" ({detail})" if detail else "")
