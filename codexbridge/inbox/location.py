"""Where a mailbox's files live.

Paths here are plain `str`: this module is on the Stop hook's fast path and pathlib
costs several milliseconds of import in a normal (non-editable) install.

Per mailbox NAME, in the inbox directory:

    NAME.jsonl                  pending mail, one JSON object a line
    NAME.jsonl.taken-PID-NONCE  a batch being delivered by process PID (flock held)
    NAME.rejected.jsonl         lines that could not be read, with the reason
    NAME.session.json           the last listener (Stop hook / watcher)
    NAME.lock                   the writers' lock; never renamed
    NAME.delivered              recently delivered ids (bounded), for de-dup
    NAME.chain.json             the Stop hook's consecutive-block count, while a chain runs
    NAME.watcher                the asyncRewake watcher's claim and lock
"""

from __future__ import annotations

import os

from ..host.private import ensure_private_dir, state_home

__all__ = ["ensure_private_dir", "state_home"]  # re-exported: the hook's one import path

MAIL_SUFFIX = ".jsonl"
TAKEN_MARK = ".jsonl.taken-"
REJECTED_SUFFIX = ".rejected.jsonl"
SESSION_SUFFIX = ".session.json"


def inbox_dir() -> str:
    """`$CODEX_BRIDGE_INBOX_DIR`, else `<state home>/inbox`."""
    return os.environ.get("CODEX_BRIDGE_INBOX_DIR") or os.path.join(state_home(), "inbox")


def log_dir() -> str:
    return os.path.join(state_home(), "logs")


def mail_path(inbox: str, name: str) -> str:
    return os.path.join(inbox, name + MAIL_SUFFIX)


def rejected_path(inbox: str, name: str) -> str:
    return os.path.join(inbox, name + REJECTED_SUFFIX)


def session_path(inbox: str, name: str) -> str:
    return os.path.join(inbox, name + SESSION_SUFFIX)


def lock_path(inbox: str, name: str) -> str:
    return os.path.join(inbox, name + ".lock")


def delivered_path(inbox: str, name: str) -> str:
    return os.path.join(inbox, name + ".delivered")


def chain_path(inbox: str, name: str) -> str:
    return os.path.join(inbox, name + ".chain.json")


def watcher_path(inbox: str, name: str) -> str:
    return os.path.join(inbox, name + ".watcher")


def taken_prefix(name: str) -> str:
    """File-name prefix of NAME's taken batches (`NAME.jsonl.taken-`)."""
    return name + TAKEN_MARK


def taken_files(inbox: str, name: str) -> list[str]:
    """Paths of NAME's taken batches, oldest first (live owners' included)."""
    prefix = taken_prefix(name)
    found: list[tuple[float, str]] = []
    try:
        with os.scandir(inbox) as entries:
            for entry in entries:
                if entry.name.startswith(prefix) and not entry.name.endswith(".tmp"):
                    try:
                        found.append((entry.stat().st_mtime, entry.path))
                    except FileNotFoundError:
                        continue
    except FileNotFoundError:
        return []
    found.sort()
    return [path for _, path in found]
