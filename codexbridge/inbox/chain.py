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

from ..host.jsonfile import loads_json
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
# What a damaged file counts as: over any CODEX_BRIDGE_MAX_CHAIN (fails closed).
DAMAGED_BLOCKS = 1 << 30


def session_key(session_id: object) -> str:
    """The key a session's chain is counted under (garbage stdin still gets one)."""
    return session_id if isinstance(session_id, str) and session_id else UNKNOWN_SESSION


class _Damaged(Exception):
    """The chain file is there but cannot be read as ours."""


def _load_all(inbox: str, name: str) -> dict[str, dict[str, Any]]:
    """Every session's chain; {} when there is no file. _Damaged when the file is there
    but unreadable, not JSON (or nested past reading), or not shaped as we write it."""
    try:
        with open(chain_path(inbox, name), encoding="utf-8") as fh:
            data = loads_json(fh.read())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise _Damaged(str(exc)) from None
    sessions = data.get("sessions") if isinstance(data, dict) else None
    if not isinstance(sessions, dict) or not all(map(_sound, sessions.values())):
        raise _Damaged('not {"sessions": {SESSION: {"blocks": COUNT, ...}}}')
    return sessions


def _sound(entry: object) -> bool:
    blocks = entry.get("blocks") if isinstance(entry, dict) else None
    return isinstance(blocks, int) and not isinstance(blocks, bool) and blocks >= 0


def damage_note(inbox: str, name: str, why: str) -> str:
    """What the hook log says about a damaged chain file: which, and what to do."""
    import shlex  # only now: the Stop hook's usual path does without it

    path = chain_path(inbox, name)
    return (f"{path} is damaged ({why}): the loop guard cannot count this mailbox's chain "
            "of blocks, so no mail is delivered at a stop (it waits, nothing is lost) "
            f"until the file is gone — delete it: rm {shlex.quote(path)}")


def _store_all(inbox: str, name: str, sessions: dict[str, dict[str, Any]]) -> None:
    path = chain_path(inbox, name)
    if not sessions:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    write_private(path, json.dumps({"sessions": sessions}).encode("utf-8"))


def load(inbox: str, name: str,
         session_key: str) -> tuple[int, str | None] | tuple[int, str | None, str] | None:
    """(blocks so far, prompt_id of the chain) for this session, or None. A damaged file
    fails closed: (DAMAGED_BLOCKS, None, what to do) — over any limit, whatever the
    prompt (hook.ChainState's `damaged`)."""
    try:
        entry = _load_all(inbox, name).get(session_key)
    except _Damaged as exc:
        return DAMAGED_BLOCKS, None, damage_note(inbox, name, str(exc))
    if entry is None:
        return None
    prompt = entry.get("prompt_id")
    return int(entry["blocks"]), prompt if isinstance(prompt, str) else None


def save(inbox: str, name: str, session_key: str, blocks: int, prompt_id: str | None) -> None:
    """Count one more block. A damaged file is left as it is (the person deletes it)."""
    try:
        sessions = _load_all(inbox, name)
    except _Damaged:
        return
    stale = iso_utc(time.time() - MAX_AGE_S)
    sessions = {k: v for k, v in sessions.items() if str(v.get("at", "")) >= stale}
    sessions[session_key] = {"blocks": blocks, "prompt_id": prompt_id, "at": iso_utc()}
    if len(sessions) > MAX_SESSIONS:
        oldest = sorted(sessions, key=lambda k: str(sessions[k].get("at", "")))
        for key in oldest[: len(sessions) - MAX_SESSIONS]:
            del sessions[key]
    _store_all(inbox, name, sessions)


def clear(inbox: str, name: str, session_key: str) -> None:
    """End the session's chain. A damaged file is left as it is: removing it by ourselves
    would reset every session's count (fail open) without anyone knowing why."""
    if not os.path.exists(chain_path(inbox, name)):
        return
    try:
        sessions = _load_all(inbox, name)
    except _Damaged:
        return
    if sessions.pop(session_key, None) is not None or not sessions:
        _store_all(inbox, name, sessions)


def active(inbox: str, name: str) -> bool:
    return os.path.exists(chain_path(inbox, name))
