"""Claude Code's cross-session inbox, the wire side: the one frame we write to a running
session's unix socket, the receipts it may send back, and the settings that refuse it.

Measured on Claude Code 2.1.332 (docs/protocol-notes.md, "Claude Code's cross-session
inbox"): a session listens on the socket its registry entry names
(`claude/files.SessionEntry`); one msgV-1 JSON line written there becomes a peer message;
bad news comes back as `peer_message_status` receipts on the `from` address we name.
It is Claude Code's internal protocol, so this module knows only its bytes: whether and
when to use it, and what a delivery is, belong to the engine (`messages/live.py`).
"""

from __future__ import annotations

import json
import os
import secrets
import select
import socket
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from ..host.jsonfile import loads_json
from .files import Receipt

if TYPE_CHECKING:
    from ..jsontypes import JsonObject

PEER_PROTOCOL = 1  # the registry's peerProtocol we speak (msgV 1 frames)
# The receipt statuses that mean "not delivered" (delivered comes only for a released
# hold, which we never cause: we do not push to sessions that hold).
BAD_STATUSES = ("held", "denied", "expired", "refused", "dropped")
FRAME_MAX = 900_000  # bytes; Claude Code reads at most 1 MiB a line (measured)


def inbound_policy(settings: Iterable[tuple[str, Mapping[str, object]]]) -> tuple[str, str] | None:
    """The strictest crossSessionInbound among the settings files, with its file."""
    rank = {"accept": 0, "hold": 1, "refuse": 2}
    worst: tuple[str, str] | None = None
    for path, data in settings:
        value = data.get("crossSessionInbound")
        if isinstance(value, str) and value in rank and value != "accept" and (
                worst is None or rank[value] > rank[worst[0]]):
            worst = (value, path)
    return worst


def frame(text: str, msg_id: str, session_id: str, reply_path: str | None, *,
          interrupt: bool = False) -> bytes | None:
    """One msgV-1 frame: our mail as a peer message, or None when it would not fit in
    one line. `next` lands after the running turn (or at its next tool result); `now`
    would cut the reply the user is watching, so only an explicit interrupt asks for
    it. `session_id` guards against a reused pid. No `from-mode` envelope, ever."""
    body: JsonObject = {"msgV": 1, "msg_id": msg_id, "type": "user",
                            "message": {"role": "user", "content": text},
                            "priority": "now" if interrupt else "next",
                            "session_id": session_id}
    if reply_path:
        body["from"] = f"uds:{reply_path}"  # where Claude sends its receipts
    data = (json.dumps(body, ensure_ascii=False) + "\n").encode("utf-8")
    return data if len(data) <= FRAME_MAX else None


def receipt_problem(receipt: Receipt, msg_id: str) -> str | None:
    """Why a `peer_message_status` receipt says our frame was not delivered, or None."""
    if receipt.action != "peer_message_status":
        return None
    ours = receipt.orig_msg_id == msg_id or msg_id in receipt.dropped_msg_ids
    if not ours or receipt.status not in BAD_STATUSES:
        return None
    return f"Claude Code {receipt.status} it" + (f" ({receipt.detail})" if receipt.detail
                                                 else "")


def bind_reply(session_socket: str) -> tuple[socket.socket, str] | None:
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


def receipts(server: socket.socket, wait: float) -> Iterator[Receipt]:
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
            yield Receipt.from_json(receipt)


def send(path: str, data: bytes) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(2.0)
        conn.connect(path)
        conn.sendall(data)
        conn.shutdown(socket.SHUT_WR)
