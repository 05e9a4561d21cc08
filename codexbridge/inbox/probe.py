"""The cheap "is there anything to deliver?" check, run before any heavy import.

Stdlib only: it runs at every Claude stop and in the watcher's poll loop.
"""

from __future__ import annotations

import os

from ..host.locking import lock, unlock
from .location import mail_path, taken_files


def has_pending(inbox: str, name: str) -> bool:
    """True if NAME.jsonl holds bytes or a dead taker left a batch behind."""
    try:
        if os.stat(mail_path(inbox, name)).st_size > 0:
            return True
    except FileNotFoundError:
        pass
    for path in taken_files(inbox, name):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            if lock(fd, blocking=False):  # nobody holds it: an orphan to recover
                unlock(fd)
                return True
        finally:
            os.close(fd)
    return False


def has_live(inbox: str, name: str) -> bool:
    """True if a live delivery of NAME is still in flight (`live.py` settles it)."""
    prefix = f"{name}.live-"
    try:
        with os.scandir(inbox) as entries:
            return any(e.name.startswith(prefix) for e in entries)
    except FileNotFoundError:
        return False
