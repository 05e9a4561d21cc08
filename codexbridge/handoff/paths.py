"""Where handoff state lives. Stdlib only: the SessionStart hook calls `pending_path`.

    <state home>/handoff/<project key>.json         the project's ledger (0600)
    <state home>/handoff/<project key>.lock         its writers' lock; never renamed
    <state home>/handoff/<project key>/<id>.delta.txt   each bounded delta (0600)
    <state home>/handoff/<project key>/<id>.full.txt    its un-truncated companion (0600)
    <state home>/handoff/pending/<session id>.json  a delta waiting for that Claude
                                                    session's SessionStart hook
"""

from __future__ import annotations

import os

from ..host.private import state_home

PENDING = "pending"
# A Claude session id names a file here, so it must be a plain token.
_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def handoff_root() -> str:
    return os.path.join(state_home(), "handoff")


def project_dir(project: str) -> str:
    """The project as one canonical absolute path (symlinks resolved)."""
    return os.path.realpath(os.path.abspath(os.path.expanduser(project)))


def project_key(project: str) -> str:
    """16 hex characters of the project's canonical path: its state file's name."""
    import hashlib  # not on the hook's path

    return hashlib.sha256(project_dir(project).encode("utf-8")).hexdigest()[:16]


def state_path(key: str) -> str:
    return os.path.join(handoff_root(), key + ".json")


def lock_path(key: str) -> str:
    return os.path.join(handoff_root(), key + ".lock")


def files_dir(key: str) -> str:
    return os.path.join(handoff_root(), key)


def valid_session_id(session_id: object) -> bool:
    return (isinstance(session_id, str) and 0 < len(session_id) <= 128
            and not (set(session_id) - _ID_CHARS))


def pending_dir() -> str:
    return os.path.join(handoff_root(), PENDING)


def pending_path(session_id: str) -> str:
    """The pending delta of Claude session `session_id` (validate the id first)."""
    return os.path.join(pending_dir(), session_id + ".json")
