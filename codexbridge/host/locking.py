"""The one cross-process lock primitive the mailbox uses.

It is `fcntl.flock`: codexbridge runs on POSIX only (Linux, macOS — unix sockets,
`/proc`, process groups everywhere), and flock is what portalocker itself would call
there, minus the ~45 ms its import costs at every Claude stop.

flock locks belong to the open file and vanish when the process dies, which is exactly
what lets a later drain tell a dead owner's taken batch from a live one.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from .private import open_state


def lock(fd: int, *, blocking: bool = True) -> bool:
    """Take an exclusive lock on `fd`. Non-blocking: False when someone else holds it."""
    flags = fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB
    try:
        fcntl.flock(fd, flags)
    except BlockingIOError:
        return False
    return True


def unlock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)


def lock_with_timeout(fd: int, timeout: float, poll: float = 0.02) -> bool:
    """Poll a non-blocking lock until `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        if lock(fd, blocking=False):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)


class LockTimeout(TimeoutError):
    """Another live process held the lock for longer than we may wait."""


class FileLock:
    """`with FileLock(path):` — exclusive lock on a small, never-renamed lock file.

    `timeout` (seconds) bounds the wait: the Stop hook must never hang a Claude stop on
    a process that holds a mailbox lock and does not let go (a dead holder's flock is
    gone with it)."""

    def __init__(self, path: str, timeout: float | None = None) -> None:
        self.path = path
        self.timeout = timeout
        self._fd = -1

    def __enter__(self) -> FileLock:
        self._fd = open_state(self.path, os.O_RDWR | os.O_CREAT)
        try:
            if self.timeout is None:
                lock(self._fd)
            elif not lock_with_timeout(self._fd, self.timeout):
                raise LockTimeout(f"{self.path} is held by another process (waited "
                                  f"{self.timeout:g} s)")
        except BaseException:
            os.close(self._fd)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            # Closing the file releases the flock too; unlock first so a waiter wakes
            # even if close is slow.
            try:
                unlock(fd)
            finally:
                os.close(fd)


@contextmanager
def try_lock(path: str) -> Iterator[bool]:
    """`with try_lock(p) as mine:` — mine is False when another holder has it (now)."""
    fd = open_state(path, os.O_RDWR | os.O_CREAT)
    try:
        mine = lock(fd, blocking=False)
        try:
            yield mine
        finally:
            if mine:
                unlock(fd)
    finally:
        os.close(fd)
