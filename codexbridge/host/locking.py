"""The one cross-process lock primitive the mailbox uses.

On POSIX it is `fcntl.flock` — the primitive portalocker itself uses there by default —
called directly because importing portalocker costs about 45 ms (it reads package
metadata at import), and the Stop hook runs at every Claude stop. Locks taken here and
locks taken with `portalocker.lock(..., LOCK_EX)` on POSIX exclude each other (a test
proves it). Elsewhere (Windows) we defer to portalocker.

flock locks belong to the open file and vanish when the process dies, which is exactly
what lets a later drain tell a dead owner's taken batch from a live one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


def lock(fd: int, *, blocking: bool = True) -> bool:
    """Take an exclusive lock on `fd`. Non-blocking: False when someone else holds it."""
    if fcntl is not None:
        flags = fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB
        try:
            fcntl.flock(fd, flags)
        except BlockingIOError:
            return False
        return True
    import portalocker  # pragma: no cover - Windows

    pflags = portalocker.LOCK_EX if blocking else portalocker.LOCK_EX | portalocker.LOCK_NB
    try:  # pragma: no cover
        portalocker.lock(fd, pflags)
    except portalocker.LockException:  # pragma: no cover
        return False
    return True  # pragma: no cover


def unlock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return
    import portalocker  # pragma: no cover

    portalocker.unlock(fd)  # pragma: no cover


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
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
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
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        mine = lock(fd, blocking=False)
        try:
            yield mine
        finally:
            if mine:
                unlock(fd)
    finally:
        os.close(fd)
