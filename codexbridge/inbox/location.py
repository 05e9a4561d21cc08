"""A mailbox's files, and the cheap "is anything there?" looks the Stop hook makes
before any heavy import. What a mailbox may be called and the directory they live in
are `host/mailboxes.py` (the engine decides from them too).

Paths are plain `str` (pathlib costs several milliseconds of import in a normal,
non-editable install): this module is on the Stop hook's fast path, stdlib only.

Per mailbox NAME, in the inbox directory (`host.mailboxes.inbox_dir`):

    NAME.jsonl                  pending mail, one JSON object a line (`store.py` writes it)
    NAME.jsonl.taken-PID-NONCE  a batch being delivered by process PID (flock held)
    NAME.rejected.jsonl         lines that could not be read, with the reason
    NAME.session.json           the last listener (`messages/listeners.py`)
    NAME.lock                   the writers' lock; never renamed
    NAME.delivered              recently delivered ids (bounded), for de-dup
    NAME.chain.json             the Stop hook's consecutive-block count, while a chain runs
    NAME.watcher                the asyncRewake watcher's claim and lock
    NAME.live-<msg id>.json     a live delivery in flight (`live.py`)
    NAME.spill/                 the whole text of big mail (`render.py`)
"""

from __future__ import annotations

import os

from ..host.locking import lock
from ..host.private import open_state, state_home

# --- files -----------------------------------------------------------------------------------

MAIL_SUFFIX = ".jsonl"
LIVE_MARK = ".live-"
TAKEN_MARK = ".jsonl.taken-"
REJECTED_SUFFIX = ".rejected.jsonl"


def log_dir() -> str:
    return os.path.join(state_home(), "logs")


def mail_path(inbox: str, name: str) -> str:
    return os.path.join(inbox, name + MAIL_SUFFIX)


def rejected_path(inbox: str, name: str) -> str:
    return os.path.join(inbox, name + REJECTED_SUFFIX)


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


# --- is anything there? --------------------------------------------------------------------

def held(path: str) -> bool | None:
    """Whether a live process holds `path`'s flock — a taken batch being delivered, an
    in-flight live record (`live.py`); None when the file is gone. The flock dies with
    its process, so a pid that could be reused is never trusted instead."""
    try:
        fd = open_state(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        return not lock(fd, blocking=False)
    finally:
        os.close(fd)  # (drops the lock if we just took it)


def has_pending(inbox: str, name: str) -> bool:
    """True if NAME.jsonl holds bytes or a dead taker left a batch behind."""
    try:
        if os.stat(mail_path(inbox, name)).st_size > 0:
            return True
    except FileNotFoundError:
        pass
    return any(held(path) is False for path in taken_files(inbox, name))  # orphans


def has_live(inbox: str, name: str) -> bool:
    """True if a live delivery of NAME is still in flight (`live.py` settles it)."""
    prefix = f"{name}{LIVE_MARK}"
    try:
        with os.scandir(inbox) as entries:
            return any(e.name.startswith(prefix) for e in entries)
    except FileNotFoundError:
        return False


def spill_dir(inbox: str, name: str) -> str:
    """Where the whole text of NAME's big mail is kept (render.py)."""
    return os.path.join(inbox, f"{name}.spill")


def live_path(inbox: str, name: str, msg_id: str) -> str:
    """The record of one live delivery while it is in flight (live.py)."""
    return os.path.join(inbox, f"{name}{LIVE_MARK}{msg_id}.json")


def live_files(inbox: str, name: str) -> list[str]:
    """NAME's live delivery records, sorted."""
    prefix = f"{name}{LIVE_MARK}"
    try:
        with os.scandir(inbox) as entries:
            return sorted(e.path for e in entries
                          if e.name.startswith(prefix) and e.name.endswith(".json"))
    except FileNotFoundError:
        return []
