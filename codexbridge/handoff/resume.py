"""A delta waiting for a Claude session that is not running: its SessionStart hook
hands it over as `additionalContext` when the session is resumed — exactly once.

    pending/<sid>.json                   written by the handoff (temp + rename, 0600)
    pending/<sid>.<pid>.claimed          renamed by the hook process <pid> that owns it
    pending/<sid>.<handoff id>.consumed  renamed once the hook has printed it

Whoever renames `<sid>.json` first owns it: the hook (then it is delivered) or a newer
handoff superseding it (then it never arrives, and its material is built again from the
old watermarks). A rename is atomic, so two owners are impossible, across a crash or a
race. The hook commits the watermarks after printing; if it dies before that, the next
handoff (or `handoff status`) finds the `.consumed` file and commits them.

Measured (Claude Code 2.1.332, `claude -p --resume ID`): the hook gets `source:
"resume"` and the same session id; the text reaches the model as a system entry after
the prompt; over 10,000 characters Claude replaces it with a 2 KB preview and a file
path, so the resume road caps the delta below that (docs/protocol-notes.md).

On the SessionStart fast path this module costs one `stat`: stdlib only at import —
which is why the handoff state's root lives here, not in `ledger.py`.
"""

from __future__ import annotations

import json
import os
import sys
from enum import StrEnum

from ..host.jsonfile import loads_json, read_object
from ..host.private import state_home, write_private
from ..jsontypes import obj

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ..jsontypes import JsonObject

RESUME_CAP = 9_000  # characters: Claude Code keeps additionalContext whole up to 10,000
# A Claude session id names a file here, so it must be a plain token.
_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


class Fate(StrEnum):
    """Where a resume handoff stands when a later one looks (`settle`)."""

    SUPERSEDED = "superseded"  # taken back: it never arrives
    CONSUMED = "consumed"  # the hook handed it over
    DELIVERING = "delivering"  # a live hook holds it
    LOST = "lost"  # nothing left of it, or its hook died before printing


def handoff_root() -> str:
    return os.path.join(state_home(), "handoff")


def pending_dir() -> str:
    return os.path.join(handoff_root(), "pending")


def pending_path(session_id: str) -> str:
    """The pending delta of Claude session `session_id` (validate the id first)."""
    return os.path.join(pending_dir(), session_id + ".json")


def valid_session_id(session_id: object) -> bool:
    return (isinstance(session_id, str) and 0 < len(session_id) <= 128
            and not (set(session_id) - _ID_CHARS))


def claimed_path(session_id: str, pid: int) -> str:
    return os.path.join(pending_dir(), f"{session_id}.{pid}.claimed")


def consumed_path(session_id: str, handoff_id: str) -> str:
    return os.path.join(pending_dir(), f"{session_id}.{handoff_id}.consumed")


def write_pending(session_id: str, record: JsonObject) -> str:
    path = pending_path(session_id)
    write_private(path, json.dumps(record, ensure_ascii=False).encode("utf-8"), durable=True)
    return path


def read_pending(session_id: str) -> JsonObject | None:
    return read_object(pending_path(session_id))


def settle(session_id: str, handoff_id: str) -> Fate:
    """Where handoff `handoff_id` to `session_id` stands, taking it back (SUPERSEDED) if
    it is still waiting."""
    from ..host.procs import pid_alive

    path = pending_path(session_id)
    current = read_pending(session_id)
    if current is not None and current.get("id") == handoff_id:
        taken = path + f".superseded-{os.getpid()}"
        try:
            os.rename(path, taken)
        except FileNotFoundError:
            pass  # the hook won the race: look below
        else:
            os.unlink(taken)
            return Fate.SUPERSEDED
    if os.path.exists(consumed_path(session_id, handoff_id)):
        return Fate.CONSUMED
    try:
        names = os.listdir(pending_dir())
    except FileNotFoundError:
        return Fate.LOST
    for name in names:
        head, _, rest = name.partition(".")
        pid, _, tail = rest.partition(".")
        if head == session_id and tail == "claimed" and pid.isdigit():
            claimed = os.path.join(pending_dir(), name)
            if _holds(claimed, handoff_id):
                if pid_alive(int(pid)):
                    return Fate.DELIVERING
                os.replace(claimed, claimed + ".dead")
                return Fate.LOST
    return Fate.LOST


def _holds(path: str, handoff_id: str) -> bool:
    held = read_object(path)
    return held is not None and held.get("id") == handoff_id


def on_session_start(payload: JsonObject, log: Callable[[str], None]) -> bool:
    """The SessionStart hook's part: hand over this session's pending delta, if any.
    Prints the hook output and returns True when it did."""
    session = payload.get("session_id")
    if not valid_session_id(session):
        return False
    assert isinstance(session, str)
    path = pending_path(session)
    try:
        os.stat(path)
    except FileNotFoundError:
        return False  # the fast path: nothing is waiting
    claimed = claimed_path(session, os.getpid())
    try:
        os.rename(path, claimed)
    except FileNotFoundError:
        return False  # a newer handoff superseded it this very moment
    try:
        with open(claimed, encoding="utf-8") as fh:
            record = obj(loads_json(fh.read()))
        text = str(record["text"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        os.replace(claimed, claimed + ".bad")
        log(f"handoff: pending delta for session {session} is unreadable: {exc!r}")
        return False
    out = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
    sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    hid = str(record.get("id"))
    os.replace(claimed, consumed_path(session, hid))
    try:
        from .ledger import commit, locked, pending

        with locked(str(record["key"]), str(record["project"])) as state:
            target = str(record["target"])
            commit(state, target, pending(state, target, hid) or record,
                   "the SessionStart hook")
    except Exception as exc:  # the next handoff commits it from the .consumed file
        log(f"handoff {hid}: handed to session {session}, watermarks not yet moved: {exc!r}")
    return True
