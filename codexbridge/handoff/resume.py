"""A delta waiting for a Claude session that is not running: its SessionStart hook
hands it over as `additionalContext` when the session is resumed — exactly once.

    pending/<sid>.json                   a `Parked` delta, written by the handoff (temp +
                                         rename, 0600)
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

from ..host.jsonfile import damaged, read_record, record_version
from ..host.private import state_home, write_private
from ..host.procs import pid_alive

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


PARKED_VERSION = 1  # the pending file's format (files without one are version 1)
WHAT = "pending handoff delta"  # how a DamagedStateError names the file


class Parked:
    """A delta waiting for a session to resume: handoff `handoff_id` to `target` in the
    ledger `key` of `project`, its `text`, and `record` — the whole file, which carries
    the ledger's pending record the hook commits (should the ledger have lost its own).
    (A plain class: this is the SessionStart hook's path.)"""

    __slots__ = ("handoff_id", "key", "project", "record", "target", "text")
    _NAMED = ("id", "key", "project", "target", "text")  # the fields read here

    def __init__(self, handoff_id: str, key: str, project: str, target: str, text: str,
                 record: JsonObject | None = None) -> None:
        self.handoff_id, self.key, self.project = handoff_id, key, project
        self.target, self.text, self.record = target, text, record or {}

    @classmethod
    def from_json(cls, data: JsonObject, path: str) -> Parked:
        """The delta in `data` (the file at `path`); DamagedStateError when a field this
        hook needs is missing or not a string (our writer always writes them)."""
        hid, key, project, target, text = (data.get(k) for k in cls._NAMED)
        if not (isinstance(hid, str) and isinstance(key, str) and isinstance(project, str)
                and isinstance(target, str) and isinstance(text, str)):
            raise damaged(path, WHAT, "a field of " + ", ".join(cls._NAMED) + " is missing")
        return cls(hid, key, project, target, text, data)

    def to_json(self) -> JsonObject:
        return {**self.record, "version": PARKED_VERSION, "id": self.handoff_id,
                "key": self.key, "project": self.project, "target": self.target,
                "text": self.text}


def write_pending(session_id: str, parked: Parked) -> str:
    path = pending_path(session_id)
    write_private(path, json.dumps(parked.to_json(), ensure_ascii=False).encode("utf-8"),
                  durable=True)
    return path


def read_parked(path: str) -> Parked | None:
    """The delta in `path` (None: there is none); DamagedStateError naming a damaged
    file."""
    data = read_record(path, WHAT)
    if data is None:
        return None
    record_version(data, path, WHAT)  # a newer one is read for the fields above
    return Parked.from_json(data, path)


def read_pending(session_id: str) -> Parked | None:
    return read_parked(pending_path(session_id))


def _holds(path: str, handoff_id: str) -> bool:
    """Does `path` hold handoff `handoff_id`'s delta? (A damaged file holds none.)"""
    try:
        parked = read_parked(path)
    except OSError:  # (DamagedStateError is a StateError, an OSError)
        return False
    return parked is not None and parked.handoff_id == handoff_id


def settle(session_id: str, handoff_id: str) -> Fate:
    """Where handoff `handoff_id` to `session_id` stands, taking it back (SUPERSEDED) if
    it is still waiting."""
    path = pending_path(session_id)
    if _holds(path, handoff_id):
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
        parked = read_parked(claimed)
    except OSError as exc:  # (DamagedStateError is a StateError, an OSError)
        os.replace(claimed, claimed + ".bad")
        log(f"handoff: pending delta for session {session} is unreadable: {exc!r}")
        return False
    if parked is None:
        return False  # gone under us (nothing else renames a claimed file)
    out = {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                  "additionalContext": parked.text}}
    sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    hid = parked.handoff_id
    os.replace(claimed, consumed_path(session, hid))
    try:
        # here, not at the top: the ledger imports typing and dataclasses, which the
        # SessionStart hook's fast path (nothing pending) must not pay for
        from .ledger import commit, locked, pending, pending_record

        with locked(parked.key, parked.project) as state:
            target = parked.target
            commit(state, target, pending(state, target, hid) or pending_record(parked.record),
                   "the SessionStart hook")
    except Exception as exc:  # the next handoff commits it from the .consumed file
        log(f"handoff {hid}: handed to session {session}, watermarks not yet moved: {exc!r}")
    return True
