"""What a Claude session is handling right now: the peer mail it was last handed.

    <state home>/conversations/handling/<session id>.json
        {mailbox, conversation, requests: [{request, thread, conversation}], at}

Written by whoever hands mail to the session (the Stop hook, the watcher, a live
push); taken — read and removed in one rename — at the session's next stop, when its
final message (`last_assistant_message`) is the answer to every request listed that
expects one. Meanwhile a `talk send` run from that session's Bash tool reads it to stay
in the same conversation (and hop budget) as the mail it is answering.

Standard library only, and one stat on the Stop hook's fast path.
"""

from __future__ import annotations

import json
import os

from ..host.private import ensure_private_dir, state_home, write_private

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _dir() -> str:
    return os.path.join(state_home(), "conversations", "handling")


def path(session_id: str) -> str:
    safe = "".join(ch for ch in session_id if ch.isalnum() or ch in "-_")[:80] or "unknown"
    return os.path.join(_dir(), f"{safe}.json")


def note(session_id: str, mailbox: str, mails: list[dict[str, Any]]) -> None:
    """The session was just handed `mails` (each mail's JSON object)."""
    requests = []
    conversation = None
    for mail in mails:
        conv = mail.get("conversation")
        if isinstance(conv, str):
            conversation = conv
        expect = mail.get("expect_reply")
        if isinstance(expect, dict) and isinstance(expect.get("thread"), str):
            requests.append({"request": mail.get("request") or mail.get("id"),
                             "thread": expect["thread"], "conversation": conv})
    if conversation is None and not requests:
        return
    current = read(session_id) or {}
    merged = list(current.get("requests") or []) + requests
    ensure_private_dir(_dir())
    write_private(path(session_id), json.dumps({
        "mailbox": mailbox, "conversation": conversation or current.get("conversation"),
        "requests": merged}).encode("utf-8"))


def read(session_id: str) -> dict[str, Any] | None:
    try:
        with open(path(session_id), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def take(session_id: str) -> dict[str, Any] | None:
    """Read and remove the marker in one step (a rename: one taker only)."""
    src = path(session_id)
    if not os.path.exists(src):
        return None
    taken = f"{src}.{os.getpid()}.taking"
    try:
        os.rename(src, taken)
    except FileNotFoundError:
        return None
    try:
        with open(taken, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        data = None
    finally:
        try:  # noqa: SIM105 - no contextlib on the hook's path
            os.unlink(taken)
        except FileNotFoundError:
            pass
    return data if isinstance(data, dict) else None
