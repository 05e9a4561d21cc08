"""The Stop hook's own count of consecutive blocks, per Claude session.

`NAME.chain.json` exists only while a chain of blocks runs: the hook writes it when it
blocks and deletes its session's entry when it lets Claude stop. So the empty-mailbox
fast path only has to check that the file is absent.
"""

from __future__ import annotations

import contextlib
import json
import os
import time

from ..host.private import write_private
from .clock import iso_utc
from .location import chain_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Sessions whose chain never ended (Claude killed mid-chain) are forgotten past these.
MAX_SESSIONS = 32
MAX_AGE_S = 24 * 3600
UNKNOWN_SESSION = "unknown-session"


def session_key(session_id: object) -> str:
    """The key a session's chain is counted under (garbage stdin still gets one)."""
    return session_id if isinstance(session_id, str) and session_id else UNKNOWN_SESSION


def _load_all(inbox: str, name: str) -> dict[str, dict[str, Any]]:
    try:
        with open(chain_path(inbox, name), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    sessions = data.get("sessions") if isinstance(data, dict) else None
    return {k: v for k, v in sessions.items() if isinstance(v, dict)} \
        if isinstance(sessions, dict) else {}


def _store_all(inbox: str, name: str, sessions: dict[str, dict[str, Any]]) -> None:
    path = chain_path(inbox, name)
    if not sessions:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    write_private(path, json.dumps({"sessions": sessions}).encode("utf-8"))


def load(inbox: str, name: str, session_key: str) -> tuple[int, str | None] | None:
    """(blocks so far, prompt_id of the chain) for this session, or None."""
    entry = _load_all(inbox, name).get(session_key)
    if entry is None:
        return None
    blocks = entry.get("blocks")
    prompt = entry.get("prompt_id")
    return (blocks if isinstance(blocks, int) and blocks >= 0 else 0,
            prompt if isinstance(prompt, str) else None)


def save(inbox: str, name: str, session_key: str, blocks: int, prompt_id: str | None) -> None:
    sessions = _load_all(inbox, name)
    stale = iso_utc(time.time() - MAX_AGE_S)
    sessions = {k: v for k, v in sessions.items() if str(v.get("at", "")) >= stale}
    sessions[session_key] = {"blocks": blocks, "prompt_id": prompt_id, "at": iso_utc()}
    if len(sessions) > MAX_SESSIONS:
        oldest = sorted(sessions, key=lambda k: str(sessions[k].get("at", "")))
        for key in oldest[: len(sessions) - MAX_SESSIONS]:
            del sessions[key]
    _store_all(inbox, name, sessions)


def clear(inbox: str, name: str, session_key: str) -> None:
    if not os.path.exists(chain_path(inbox, name)):
        return
    sessions = _load_all(inbox, name)
    if sessions.pop(session_key, None) is not None or not sessions:
        _store_all(inbox, name, sessions)


def active(inbox: str, name: str) -> bool:
    return os.path.exists(chain_path(inbox, name))
